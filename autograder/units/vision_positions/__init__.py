"""The unit vision_positions (Vision positions): its rubric, hidden cases, job code, lesson and self-checks.

TODO: say in a line what the unit teaches. Its reference is solutions/vision_positions.py; autograder/core/units.py
says what each file here must hold, and docs/writing-a-unit.md how to write them.
"""
