"""The grading core (trusted side): the rubric's types and the units registry, the cases API, the
comparison and the diagnosis of mistakes, one submission's grade, the trusted half of the timing tier,
and the results and their reports. Student code never runs in these modules' process."""
