"""The third unit's experiment (long_capstone.py): every method of the course trained at 32 words and read at up to
256, this unit's scalings read from the one RoPE model through the student's functions."""

import ast
from pathlib import Path

import torch

from autograder.core import units
from autograder.units.long_context import long_capstone

ROOT = Path(__file__).resolve().parents[3]
EVERY_METHOD = ("sinusoidal", "learned", "T5", "RoPE", "ALiBi", "RoPE + interpolation", "RoPE + NTK",
                "RoPE + dynamic NTK", "RoPE + YaRN", "RoPE + Llama 3")


def _quick(own):
    return long_capstone.train_short_read_long(own, steps=3, stories_count=300, windows=8)


def test_the_experiment_holds_no_answer():
    """It ships to students: it may call any unit's functions, never define one."""
    tree = ast.parse((ROOT / "autograder" / "units" / "long_context" / "long_capstone.py").read_text())
    defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    answers = {function for unit in units.all_units() for task in unit.rubric.TASKS for function in task.functions}
    assert not defined & answers, defined & answers


def test_scaled_rope_scores_at_ropes_own_frequencies_are_the_trained_models_scores():
    # The model trains with the second unit's interleaved rope_scores; this unit's readings go through the
    # rotate-half scaled_rope_scores with q and k reordered alike, which must give the same scores.
    functions, _ = long_capstone.course_functions(units.get("long_context").reference)
    assert long_capstone.scores_agree(functions, 16) == ""
    wrong = dict(functions, scaled_rope_scores=lambda q, k, theta, **kwargs: q @ k.transpose(-2, -1))
    assert "differs from the trained model's scores" in long_capstone.scores_agree(wrong, 16)


def test_every_method_of_the_course_is_read_at_every_length_with_the_references():
    experiment = _quick(units.get("long_context").reference)
    assert tuple(experiment.readings) == EVERY_METHOD and experiment.left_out == {}
    assert all(source == "the kit's reference" for source in experiment.sources.values())
    lengths = experiment.lengths
    assert lengths == [32, 64, 128, 256]
    for name, reading in experiment.readings.items():
        if name == "learned":  # its table has no row past 32: its own ValueError
            assert list(reading.losses) == [32] and reading.refused.startswith("refused 64 words")
        else:
            assert list(reading.losses) == lengths and all(torch.isfinite(torch.tensor(list(reading.losses.values()))))
    said = "\n".join(long_capstone.conclusions(experiment))
    closest = min((name for name in EVERY_METHOD if name != "learned"),
                  key=lambda name: abs(long_capstone.rise_of(experiment.readings[name], lengths)))
    assert f"Closest at 256 words to its own loss at 32: {closest} " in said  # computed, never written in advance
    assert "learned cannot read past 32 words" in said
    table = experiment.table()
    assert all(name in table for name in EVERY_METHOD)


def test_a_task_not_written_leaves_its_reading_out_and_says_why():
    own = dict(vars(units.get("long_context").reference))

    def stub(*args, **kwargs):
        raise NotImplementedError

    own["yarn_attention_scale"] = stub
    experiment = _quick(own)
    assert experiment.left_out == {"RoPE + YaRN": "yarn_inverse_frequencies or yarn_attention_scale is not written yet"}
    assert "RoPE + Llama 3" in experiment.readings
    own["scaled_rope_scores"] = stub
    experiment = _quick(own)
    assert set(experiment.left_out) == {"RoPE + NTK", "RoPE + dynamic NTK", "RoPE + YaRN", "RoPE + Llama 3"}
    assert all("not written yet" in why for why in experiment.left_out.values())
    assert {"RoPE", "RoPE + interpolation", "ALiBi"} <= set(experiment.readings)


def test_the_kits_command_runs_this_units_experiment_and_refuses_options_it_does_not_take():
    import subprocess
    import sys

    def capstone(*arguments):
        return subprocess.run([sys.executable, "-m", "autograder", "capstone", *arguments], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)

    run = capstone("--unit", "long_context", "--steps", "2")
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line.split("|")[0].strip() for line in run.stdout.splitlines() if line.count("|") == 6]
    assert tuple(rows[1:]) == EVERY_METHOD, run.stdout  # the header, then a row per method in the course's order
    assert "The best of each unit at 256 words: unit 1: " in run.stdout
    for arguments, said in ((("--unit", "long_context", "--classifier-steps", "2"), "--classifier-steps"),
                            (("--unit", "long_context", "--longer"), "unrecognized arguments: --longer"),
                            (("--unit", "no_such_unit"), "invalid choice: 'no_such_unit'")):
        refused = capstone(*arguments)
        assert refused.returncode == 2 and said in refused.stderr, (arguments, refused.stderr[-2000:])
    # The first unit's module takes --classifier-steps, also for its second experiment (the second unit's).
    second = capstone("--unit", "rotary_alibi", "--classifier-steps", "2", "--steps", "1")
    assert second.returncode == 0 and "rope + interpolation" in second.stdout, second.stderr[-2000:]


def test_in_a_students_folder_the_earlier_methods_run_on_the_students_own_notebooks(tmp_path, monkeypatch):
    """Without the kit, the first two units' methods run on the student's own work: their notebook of the first
    unit in its own folder beside this one (as the course's zips unpack), their .py of the second beside this
    notebook. Only their own cells run: a cell that raises is reported, and the others still define."""
    from autograder.ways_in.demo import apply, mistakes_of
    from conftest import notebook

    first, second = units.get("positional_encodings"), units.get("rotary_alibi")
    swapped = next(mistake for mistake in mistakes_of(first) if mistake.name == "sin_cos_swapped")
    (tmp_path / "positional_encodings").mkdir()
    (tmp_path / "long_context").mkdir()
    (tmp_path / "positional_encodings" / "positional_encodings.ipynb").write_text(
        notebook([apply(swapped, first.finished_reference), "raise RuntimeError('a scratch cell of theirs')",
                  "def extra_of_theirs():\n    return 7\n"]))
    (tmp_path / "long_context" / "rotary_alibi.py").write_text(second.finished_reference)

    import importlib.util
    import sys

    from autograder.course.build import student_folder

    # The student's folder: no kit to import, the notebook loader beside the notebook.
    monkeypatch.setattr(long_capstone, "_kit_reference", lambda name: None)
    spec = importlib.util.spec_from_file_location("notebook_loader",
                                                  student_folder(units.get("long_context")) / "notebook_loader.py")
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    monkeypatch.setitem(sys.modules, "notebook_loader", loader)
    monkeypatch.chdir(tmp_path / "long_context")
    functions, sources = long_capstone.course_functions(units.get("long_context").reference)
    assert sources["rotary_alibi"] == "your rotary_alibi.py", sources
    first_source = sources["positional_encodings"]
    assert first_source.startswith("your ../positional_encodings/positional_encodings.ipynb (1 cell(s) raised: ") and "RuntimeError: a scratch cell of theirs" in first_source
    assert functions["extra_of_theirs"]() == 7
    table = functions["sinusoidal_table"](6, 8)
    reference = first.reference.sinusoidal_table(6, 8)
    assert table.shape == reference.shape and not torch.allclose(table, reference)  # theirs: sin and cos swapped
    assert torch.allclose(table[:, 0::2], reference[:, 1::2]) and torch.allclose(table[:, 1::2], reference[:, 0::2])
    experiment = _quick(units.get("long_context").reference)
    assert tuple(experiment.readings) == EVERY_METHOD and experiment.left_out == {}
    assert experiment.sources == sources

    (tmp_path / "positional_encodings" / "positional_encodings.ipynb").unlink()
    (tmp_path / "long_context" / "rotary_alibi.py").unlink()
    functions, sources = long_capstone.course_functions(units.get("long_context").reference)
    assert sources["positional_encodings"] == ("not here (neither the kit nor your positional_encodings.ipynb or "
                                               "positional_encodings.py, beside this notebook or in "
                                               "../positional_encodings/): left out")
    assert sources["rotary_alibi"].endswith("; RoPE itself runs on the given apply_rotary")
    assert "sinusoidal_table" not in functions and callable(functions["rope_scores"])
