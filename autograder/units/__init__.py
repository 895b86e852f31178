"""The units of study: one package a unit, ``units/<name>/``, named after the module its students write.

Each holds its rubric (``rubric.py``), its hidden cases (``cases/<task>.py``), the code that runs beside
a student's in a job (``job.py``), its lesson, its self-checks and what else its lesson ships; its
reference is ``solutions/<name>.py``. ``autograder.core.units`` finds them and says what each must hold.
"""
