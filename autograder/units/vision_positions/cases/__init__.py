"""The hidden cases of the unit vision_positions. TODO: a module beside this one for each task of the rubric, named after
the task, with ``build(rng, generator)``; nothing to write in this file."""
