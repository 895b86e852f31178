"""What comes in from a student, read as data (trusted side): submission files as source text, never run
here (load), and student text made inert wherever it is shown (inert)."""
