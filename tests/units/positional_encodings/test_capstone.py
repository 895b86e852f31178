"""The lesson's last part (issue 13): the tiny models learn with each way of giving position, the bag-of-words
classifier cannot read order without position and can with it, and the nearest-word measurement is right."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.units.positional_encodings import capstone
from autograder.units.positional_encodings import rubric
from solutions import positional_encodings as reference

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("method", capstone.METHODS)
def test_the_language_model_learns_with_each_method(method):
    run = capstone.train_language_model(method, reference, steps=40, evaluate_every=20, stories_count=300)
    first = sum(loss for _, loss in run.train_losses[:5]) / 5
    last = sum(loss for _, loss in run.train_losses[-5:]) / 5
    assert last < 0.7 * first, (method, first, last)
    assert run.held_out_losses[-1][1] < run.held_out_losses[0][1] + 0.5
    if method == "learned":  # the student's table has 32 rows: twice the context is refused, with their message
        assert run.per_position is None and "refused" in run.longer
    else:
        assert len(run.per_position) == 64


def test_without_position_the_classifier_cannot_tell_a_sentence_from_its_swap():
    """Both orders hold the same words: without a mask or positions the model gives both the same answer, so
    exactly one of each pair is right, on the training pairs and the held-out ones."""
    run = capstone.train_order_classifier("none", reference, steps=60)
    assert run.train_accuracy == 0.5 and run.held_out_accuracy == 0.5


@pytest.mark.parametrize("method", ["learned", "sinusoidal", "shaw", "t5"])
def test_with_position_the_classifier_reads_the_order(method):
    run = capstone.train_order_classifier(method, reference, steps=200)
    assert run.train_accuracy >= 0.9, (method, run)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.integers(1, 9), st.integers(2, 16), st.floats(0.01, 3.0), st.integers(0, 2**31 - 1))
def test_the_nearest_word_measurement_agrees_with_a_plain_computation(words, positions, dimension, scale, seed):
    generator = torch.Generator().manual_seed(seed)
    word_vectors = torch.randn(words, dimension, generator=generator, dtype=torch.float64)
    position_vectors = scale * torch.randn(positions, dimension, generator=generator, dtype=torch.float64)
    same = 0
    for w in range(words):
        for p in range(positions):
            moved = word_vectors[w] + position_vectors[p]
            cosines = [float(moved @ word_vectors[v] / (moved.norm() * word_vectors[v].norm())) for v in range(words)]
            same += max(range(words), key=lambda v: cosines[v]) == w
    assert capstone.nearest_word_kept(word_vectors, position_vectors) == pytest.approx(same / (words * positions))


def test_a_method_whose_function_is_not_written_is_left_out_and_said(stub_text):
    namespace = {}
    exec(compile(stub_text, "stub.py", "exec"), namespace)
    namespace["sinusoidal_table"] = reference.sinusoidal_table  # one task written, the others stubs
    comparison = capstone.compare(namespace, steps=3, classifier_steps=3)
    assert set(comparison.language_models) == {"none", "sinusoidal"}
    assert set(comparison.left_out) == {"learned", "shaw", "t5"}
    assert all("not written yet" in why for why in comparison.left_out.values())
    table = comparison.table()
    assert "learned     | left out: LearnedPositionalEmbedding is not written yet" in table


def test_a_run_that_trains_nothing_still_gives_a_table():
    """What the notebook does under nbgrader autograde: no method trained, a table that says so."""
    table = capstone.compare(reference, methods=()).table()
    assert all(f"{method:<11} | not trained in this run" in table for method in capstone.METHODS)


def test_the_capstone_holds_no_answer():
    """It ships to students: it may call the assignment's functions, never define one."""
    tree = ast.parse((ROOT / "autograder" / "units" / "positional_encodings" / "capstone.py").read_text())
    defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    answers = {function for task in rubric.TASKS for function in task.functions}
    assert not defined & answers
    assert "solutions" not in (ROOT / "assignments" / "student" / "positional_encodings" / "capstone.py").read_text()


def test_the_command_prints_the_comparison():
    run = subprocess.run([sys.executable, "-m", "autograder", "capstone", "--steps", "4", "--classifier-steps", "4"],
                         cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    for method in capstone.METHODS:
        assert f"\n{method:<11} | " in run.stdout, run.stdout
    assert "refused" in run.stdout  # the learned table, at twice its length


def test_the_second_units_experiment_reads_longer_windows_with_each_method_and_leaves_out_what_is_missing():
    from solutions import rotary_alibi

    longer, left_out = capstone.train_short_test_long(rotary_alibi, steps=10, tune_steps=2, stories_count=300,
                                                      context=16, longer=2)
    assert left_out == {} and set(longer) == {"rope", "rope + interpolation", "alibi"}
    for run in longer.values():
        assert len(run.per_position) == 32 and all(loss > 0 for loss in run.per_position)
        assert run.trained_loss == pytest.approx(sum(run.per_position[:16]) / 16)
    without = {name: getattr(rotary_alibi, name) for name in ("rope_scores", "apply_rotary", "rotary_angles")}
    longer, left_out = capstone.train_short_test_long(without, steps=2, tune_steps=1, stories_count=300,
                                                      context=8, longer=2)
    assert set(longer) == {"rope"} and "scaled_positions is not defined" in left_out["rope + interpolation"]
    assert "alibi_bias" in left_out["alibi"]
