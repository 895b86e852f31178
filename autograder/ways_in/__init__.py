"""The ways in, side by side: the command line (cli), class runs (batch, demo), nbgrader (nbgrader_bridge,
nbgrader_inert), Gradescope (gradescope) and PrairieLearn (prairielearn). Each grades with the core and
writes its results through ``autograder.core.report``; none imports another."""
