"""Everything that runs or confines student code: the untrusted side and its walls.

``worker`` is the job, the only module of the grader that runs beside a student's code (it imports
torch and the standard library, nothing of the grader); ``protocol`` is what a job may send back;
``server`` starts the worker as a fork server inside bubblewrap (tier A) or as a user of its own per job
(``users``, tier C); ``cgroups`` and ``limits`` bound each job; ``kernel`` confines nbgrader's kernel.
"""
