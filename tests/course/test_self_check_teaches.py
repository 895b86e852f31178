"""The self-checks teach when the student's code raises (issue 25, point 7). Before, a traceback through a notebook
cell showed ``???`` where the student's line belongs (the cell's code had no file to read it from; a .py file given
with --source showed no line, or the line of another file of that name), and torch's message reached the
student bare ("Expected size for first two dimensions of batch2 tensor to be: [6, 4] but got: [6, 6]").

Now the traceback shows the student's own line, and a part headed "what went wrong, in words" follows torch's
message: which function stopped and where, the shapes of the tensors on that line, the call the check made, and
what the message means, with the sizes it quotes. Their own ``raise`` and ``assert``, and Python's NameError, pass
as they were.

The folders are built as a release builds them (``build.generated_files``) and checked as a student checks them, one
``pytest -k TASK`` each; the errors are torch's own, raised for real.
"""

import json
import re
import shutil
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import compare, units
from autograder.course import self_check_conftest as self_check
from autograder.course.build import ROOT, generated_files, strip_markers, student_folder

UNIT = units.get("positional_encodings")
HEADING = "what went wrong, in words"

# shaw_scores as a student might write it, right; each family of torch error below changes one line of it.
SHAW = '''
def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    """Shaw's scores, the formula written out."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position, device=q.device)
    content = q @ k.transpose(-2, -1)
    relative = (q[..., :, None, :] * rel_k[index]).sum(-1)
    return scale * (content + relative)
'''


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A student's folder as the release hands it out (the self-checks, conftest.py, checks.py, the loader)."""
    folder = tmp_path_factory.mktemp("released") / UNIT.name
    prefix = f"{student_folder(UNIT).relative_to(ROOT)}/"
    for name, text in generated_files([UNIT.name]).items():
        if name.startswith(prefix):
            (folder / name[len(prefix):]).parent.mkdir(parents=True, exist_ok=True)
            (folder / name[len(prefix):]).write_text(text, encoding="utf-8")
    return folder


def _replaced(source, name, definition):
    """``source`` with the top-level function or class ``name`` replaced by ``definition``."""
    start = re.search(rf"^(?:def|class) {name}\b", source, re.MULTILINE).start()
    end = re.compile(r"^(?:def|class|@)", re.MULTILINE).search(source, start + 1)
    return source[:start] + definition.strip("\n") + "\n\n\n" + (source[end.start():] if end else "")


def _student(released, tmp_path, replacements=()):
    """A copy of the released folder whose module is the reference with ``replacements`` [(name, definition)]."""
    folder = tmp_path / UNIT.name
    shutil.copytree(released, folder)
    text = strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))
    for name, definition in replacements:
        text = _replaced(text, name, definition)
    (folder / f"{UNIT.module_name}.py").write_text(text, encoding="utf-8")
    return folder, text


def _pytest(folder, *args, cwd=None):
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd or folder,
                         capture_output=True, text=True, timeout=300)
    return run.stdout + run.stderr


def _words(output):
    """The first "what went wrong, in words" part of pytest's output, up to the next test's heading."""
    found = re.search(rf"-+ {HEADING} -+\n(.*?)(?=\n_{{3,}} |\n={{3,}} )", output, re.DOTALL)
    return found.group(1) if found else None


# --- the traceback shows the student's own lines -------------------------------------------------------------

def _notebook(cells):
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": f"cell-{n}", "metadata": {}, "outputs": [], "execution_count": None,
         "source": source} for n, source in enumerate(cells)]})


def test_a_notebook_cell_s_line_is_shown_not_question_marks(released, tmp_path):
    folder, text = _student(released, tmp_path, [("shaw_scores", SHAW.replace("q @ k.transpose(-2, -1)", "q @ k"))])
    start = text.index("def shaw_scores")
    end = text.index("\ndef ", start + 1)
    (folder / f"{UNIT.module_name}.ipynb").write_text(_notebook([text[:start], text[start:end], text[end:]]))
    output = _pytest(folder, "-k", "shaw")
    assert "???" not in output, output[-3000:]
    # line 5 of the second code cell, named by its first line: the student's line, under the cell it is in
    assert re.search(r"positional_encodings\.ipynb, code cell 2, `def shaw_scores\(\.\.\.\)`:5: in shaw_scores\n"
                     r"\s+content = q @ k\n", output), \
        output[-3000:]


def test_a_py_file_given_with_source_shows_its_own_lines_not_another_file_s(released, tmp_path):
    """The folder's own positional_encodings.py is the stub; the file checked is elsewhere, under the same name."""
    folder, text = _student(released, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{UNIT.module_name}.py").write_text(
        _replaced(text, "shaw_scores", SHAW.replace("q @ k.transpose(-2, -1)", "q @ k")), encoding="utf-8")
    output = _pytest(folder, "-k", "shaw", f"--source={elsewhere / UNIT.module_name}.py")
    assert "???" not in output
    assert re.search(r"positional_encodings\.py:\d+: in shaw_scores\n\s+content = q @ k\n", output), output[-3000:]


# --- each family of torch error is told in words ----------------------------------------------------------------

# (id, task, [(name, definition)], what the words must hold)
FAMILIES = [
    ("matmul shapes", "shaw", [("shaw_scores", SHAW.replace("q @ k.transpose(-2, -1)", "q @ k"))],
     ["shaw_scores stopped with RuntimeError, at positional_encodings.py, line ", "in `q @ k`, where",
      "q is (2, 3, 5, 4) float32", "k is (2, 3, 6, 4) float32",
      "The check called shaw_scores(q=(2, 3, 5, 4) float32, k=(2, 3, 6, 4) float32, rel_k=(5, 4) float32, "
      "max_relative_position=2)",
      "pairs the last axis of its left operand, of size 4 here, with the second-to-last axis of its right one, of "
      "size 6: they must be equal"]),
    ("broadcast", "shaw", [("shaw_scores", SHAW.replace("q @ k.transpose(-2, -1)", "(q * k).sum(-1)"))],
     ["shaw_scores stopped with RuntimeError", "in `q * k`, where", "q is (2, 3, 5, 4) float32",
      "k is (2, 3, 6, 4) float32", "at axis 2 (of the longer shape, counted from the left) one has size 5 and the "
      "other 6"]),
    ("devices", "relative_positions", [("clipped_relative_positions", '''
def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    keys = torch.arange(length_k, device="meta")
    queries = torch.arange(length_q, device=device)
    distance = keys[None, :] - queries[:, None]
    return distance.clamp(-max_relative_position, max_relative_position) + max_relative_position
''')],
     ["clipped_relative_positions stopped with RuntimeError", "in `keys[None, :] - queries[:, None]`, where",
      "keys is (", ") int64 on meta", "queries is (", ") int64 on cpu",
      "The check called clipped_relative_positions(length_q=",
      "A tensor on cpu met one on meta in one operation", "device=q.device"]),
    ("dtypes", "sinusoidal", [("sinusoidal_table", '''
def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got {num_positions}")
    position = torch.arange(num_positions, device=device, dtype=torch.float64)
    frequency = base ** (-torch.arange(0, d_model, 2, device=device) / d_model)
    angle = position[:, None] @ frequency[None, :]
    return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(num_positions, d_model).to(dtype)
''')],
     ["sinusoidal_table stopped with RuntimeError", "in `position[:, None] @ frequency[None, :]`, where",
      "position is (10,) float64", "frequency is (4,) float32",
      "The check called sinusoidal_table(num_positions=10, d_model=8)",
      "Tensors of two dtypes, float64 and float32, met in an operation that needs one"]),
    ("index out of range", "shaw", [("shaw_scores", SHAW.replace("rel_k[index]", "rel_k[index + 1]"))],
     ["shaw_scores stopped with IndexError", "in `rel_k[index + 1]`, where", "rel_k is (5, 4) float32",
      "index is (5, 6) int64", "An index of 5 was used on axis 0 of a tensor, which has size 5 there: valid "
      "indices there are 0 to 4"]),
    ("view of a transposed tensor", "shaw", [("shaw_scores", SHAW.replace(
        "content = q @ k.transpose(-2, -1)",
        "content = q @ k.transpose(-2, -1)\n    flat = q.transpose(1, 2).view(q.shape[0], q.shape[2], -1)"))],
     ["shaw_scores stopped with RuntimeError", "in `q.transpose(1, 2).view(q.shape[0], q.shape[2], -1)`, where",
      "q is (2, 3, 5, 4) float32", ".view(...) reads the tensor's memory in place", "use .reshape(...)"]),
    ("indices that are not long", "shaw", [("shaw_scores", SHAW.replace("rel_k[index]", "rel_k[index.float()]"))],
     ["shaw_scores stopped with IndexError", "in `rel_k[index.float()]`, where", "rel_k is (5, 4) float32",
      "index is (5, 6) int64", "A tensor used as an index (t[idx]) must be an integer (int64) or bool tensor"]),
    ("a method: the class and the arguments it holds", "learned", [("LearnedPositionalEmbedding", '''
class LearnedPositionalEmbedding(nn.Module):
    def __init__(self, max_len, d_model, mode="add"):
        super().__init__()
        if mode not in ("add", "concat"):
            raise ValueError(f"mode must be add or concat, got {mode!r}")
        self.max_len, self.d_model, self.mode = max_len, d_model, mode
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def forward(self, x):
        if x.shape[1] > self.max_len:
            raise ValueError(f"L={x.shape[1]} is longer than max_len={self.max_len}")
        rows = self.weight[torch.arange(x.shape[1]) + 1]
        if self.mode == "add":
            return x + rows
        return torch.cat((x, rows.expand(x.shape[0], -1, -1)), dim=-1)
''')],
     ["LearnedPositionalEmbedding.forward stopped with IndexError",
      "in `self.weight[torch.arange(x.shape[1]) + 1]`, where", "self.weight is (4, 2) float32",
      "The check called LearnedPositionalEmbedding.forward(x=(1, 4, 2) float32)",
      "An index of 4 was used on axis 0 of a tensor, which has size 4 there"]),
    ("a torch NotImplementedError is no unwritten task", "sinusoidal", [("sinusoidal_table", '''
def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got {num_positions}")
    position = torch.arange(num_positions, device=device)
    weights = torch.softmax(position, dim=0)
    return weights[:, None].expand(num_positions, d_model).to(dtype)
''')],
     ["sinusoidal_table stopped with NotImplementedError", "position is (10,) int64",
      "Torch has no kernel softmax_lastdim_kernel_impl for int64 tensors: an integer tensor"]),
]


@pytest.mark.parametrize("task, replacements, expected", [family[1:] for family in FAMILIES],
                         ids=[family[0] for family in FAMILIES])
def test_a_torch_error_is_told_with_the_function_the_shapes_and_what_it_means(released, tmp_path, task,
                                                                               replacements, expected):
    folder, _ = _student(released, tmp_path, replacements)
    output = _pytest(folder, "-k", task)
    words = _words(output)
    assert words is not None, output[-4000:]
    for fragment in expected:
        assert fragment in words, (fragment, words)
    assert "not written yet" not in output
    # torch's own message and the student's line stay where pytest puts them, before the words
    before = output[:output.index(HEADING)].rsplit("\n_____", 1)[-1]  # the failure the words are about
    assert re.search(r"^E   \w+Error: ", before, re.MULTILINE), before
    assert "site-packages" not in before  # the traceback ends at the student's line, not in torch's own code
    assert re.search(r"^    .*" + re.escape(re.search(r"in `(.*?)`", words).group(1)), before, re.MULTILINE), before


def test_the_student_s_own_errors_and_python_s_pass_as_they_were(released, tmp_path):
    """Their own raise (a ValueError of theirs), an assert and a NameError get no words; a torch error beside them
    does, so the words are there only for torch's."""
    own = SHAW.replace("    content =", "    if q.shape[-2] != k.shape[-2]:\n        raise ValueError("
                                         "\"Lq != Lk is not handled\")\n    content =")
    typo = '''
def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    return bias_tabel[None]
'''
    asserted = '''
def biased_scores(q, k, bias, *, scale=None):
    assert q.shape[-2] == 1, "one query at a time"
    return q @ k.transpose(-2, -1) + bias
'''
    folder, _ = _student(released, tmp_path, [("shaw_scores", own), ("t5_bias", typo), ("biased_scores", asserted)])
    output = _pytest(folder, "-k", "shaw or t5_bias or biased_scores")
    assert "E   ValueError: Lq != Lk is not handled" in output
    assert "E   NameError: name 'bias_tabel' is not defined" in output
    assert "E   AssertionError: one query at a time" in output
    for test in re.split(r"\n_{3,} ", output)[1:]:
        assert HEADING not in test, test
    # a torch error of the same run is told in words
    torch_error = SHAW.replace("q @ k.transpose(-2, -1)", "q @ k")
    folder, _ = _student(released, tmp_path / "torch", [("shaw_scores", torch_error), ("t5_bias", typo)])
    output = _pytest(folder, "-k", "shaw or t5_bias")
    assert output.count(HEADING) == output.count("E   RuntimeError"), output[-3000:]
    assert "E   NameError: name 'bias_tabel' is not defined" in output


# --- the words, on many real errors -----------------------------------------------------------------------------

LABEL = "student.ipynb, cell 3"
STUDENT = """\
def product(a, b):
    out = a @ b
    return out


def combined(a, b):
    total = a + b
    return total


def own_error(kind, message):
    raise kind(message)
"""


@pytest.fixture(scope="module")
def student():
    """The functions above, compiled as a notebook cell is and wrapped as the checks import them."""
    self_check.show_in_tracebacks(LABEL, STUDENT)
    module = type(sys)("student_module")
    exec(compile(STUDENT, LABEL, "exec"), module.__dict__)
    return self_check.checked_module(module, {LABEL})


def _words_of(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001  (what pytest would hand to the report)
        called = self_check._last_call.pop("words", None) if self_check._last_call.pop("error", None) is error \
            else None
        return error, self_check.failure_in_words(error, error.__traceback__, {LABEL}, compare.torch_error_meaning,
                                                  called)
    raise AssertionError("the call was meant to raise")


def _meaning_line(words):
    return next(line for line in words.splitlines() if line.startswith("What it means: "))


sizes = st.integers(1, 9)


@st.composite
def mismatched_products(draw):
    """Two shapes whose matrix product torch refuses: the inner sizes differ (and the batch axes may too)."""
    inner_left = draw(sizes)
    inner_right = draw(sizes.filter(lambda size: size != inner_left))
    left = draw(st.lists(sizes, max_size=2)) + ([draw(sizes)] if draw(st.booleans()) else []) + [inner_left]
    # the right one's inner axis is its second-to-last, or its only one
    right = draw(st.lists(sizes, max_size=2)) + [inner_right, draw(sizes)] if draw(st.booleans()) else [inner_right]
    return left, right


@settings(max_examples=150, deadline=None)
@given(shapes=mismatched_products())
def test_a_product_s_words_name_the_sizes_torch_reported(student, shapes):
    a, b = torch.zeros(shapes[0]), torch.zeros(shapes[1])
    error, words = _words_of(lambda: student.product(a, b))
    assert words is not None, str(error)
    meaning = _meaning_line(words)
    for size in re.findall(r"(?<!\w)\d+", str(error)):  # not the 2 of "batch2"
        assert re.search(rf"(?<!\d){size}(?!\d)", meaning), (str(error), meaning)
    assert words.startswith(f"product stopped with {type(error).__name__}, at {LABEL}, line 2, in `a @ b`, where")
    assert f"  a is {tuple(a.shape)} float32\n  b is {tuple(b.shape)} float32" in words
    assert f"The check called product(a={tuple(a.shape)} float32, b={tuple(b.shape)} float32)." in words


@st.composite
def mismatched_shapes(draw):
    """Two shapes that do not broadcast: at one lined-up axis both sizes differ and neither is 1."""
    shape = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    axis = draw(st.integers(0, len(shape) - 1))
    shape[axis] = draw(st.integers(2, 6))
    other = list(shape)
    other[axis] = draw(st.integers(2, 7).filter(lambda size: size != shape[axis]))
    other = other[draw(st.integers(0, axis)):]  # fewer leading axes, the mismatch kept
    return (shape, other) if draw(st.booleans()) else (other, shape)


@settings(max_examples=150, deadline=None)
@given(shapes=mismatched_shapes())
def test_a_broadcast_s_words_name_the_axis_and_both_sizes_torch_reported(student, shapes):
    a, b = torch.zeros(shapes[0]), torch.zeros(shapes[1])
    error, words = _words_of(lambda: student.combined(a, b))
    told = re.search(r"tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)",
                     str(error))
    assert told, str(error)
    first, second, axis = map(int, told.groups())
    assert (f"at axis {axis} (of the longer shape, counted from the left) one has size {first} and the other "
            f"{second}") in _meaning_line(words)
    width = max(a.dim(), b.dim())  # what the sentence claims of the axis: the sizes lined up from the right there
    lined_up = [(1,) * (width - t.dim()) + tuple(t.shape) for t in (a, b)]
    assert (lined_up[0][axis], lined_up[1][axis]) == (first, second)
    assert words.startswith(f"combined stopped with RuntimeError, at {LABEL}, line 7, in `a + b`, where")


kinds = st.sampled_from([AssertionError, NameError, ValueError, RuntimeError, TypeError, IndexError, KeyError,
                         NotImplementedError, ZeroDivisionError])


@settings(max_examples=100, deadline=None)
@given(kind=kinds, message=st.text(max_size=60))
def test_the_student_s_own_raise_passes_the_wrapper_untouched_and_gets_no_words(student, kind, message):
    """Whatever they raise themselves, of whatever kind and message (a torch message too), comes out of the wrapper
    as the very same error, and no words are added to it."""
    raised = kind(message)
    try:
        student.own_error(lambda _: raised, message)
    except BaseException as error:  # noqa: BLE001
        assert error is raised
        assert self_check.failure_in_words(error, error.__traceback__, {LABEL}, compare.torch_error_meaning) is None
    else:
        raise AssertionError("own_error returns nothing")


# Torch's messages with their sizes left open: any sizes, those no real call gives too (0, negative, huge).
TEMPLATES = ["mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
             "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
             "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
             "size mismatch, got input ({}), mat ({}x{}), vec ({})",
             "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  "
             "Target sizes: [{}, {}].  Tensor sizes: [{}, {}]",
             "index {} is out of bounds for dimension {} with size {}",
             "shape '[{}, {}]' is invalid for input of size {}",
             "Dimension out of range (expected to be in range of [{}, {}], but got {})",
             "a Tensor with {} elements cannot be converted to Scalar",
             "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor "
             "number {} in the list."]


@st.composite
def messages(draw):
    template = draw(st.sampled_from(TEMPLATES))
    numbers = draw(st.lists(st.integers(-3, 10**9), min_size=template.count("{}"), max_size=template.count("{}")))
    return template.format(*numbers)


@settings(max_examples=300, deadline=None)
@given(message=st.one_of(messages(), st.text(max_size=200)))
def test_reading_any_message_never_raises(message):
    meaning = compare.torch_error_meaning(message)
    assert meaning is None or (isinstance(meaning, str) and meaning.strip())


# Torch's words for tensors on two devices where one is a GPU: quoted here (this machine has none), and raised for
# real where a GPU is.
GPU_MESSAGES = [
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    "Expected all tensors to be on the same device, but got index is on cpu, different from other tensors on cuda:0 "
    "(when checking argument for argument index in method wrapper_CUDA_gather)",
    "indices should be either on cpu or on the same device as the indexed tensor (cuda:0)",
]


@pytest.mark.parametrize("message", GPU_MESSAGES)
def test_a_gpu_s_device_messages_are_told_with_the_device_and_the_fix(message):
    meaning = compare.torch_error_meaning(message)
    assert "cuda:0" in meaning and "device=q.device" in meaning, meaning


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("call", [
    lambda: torch.ones(3, 4, device="cuda") @ torch.ones(4, 2),
    lambda: torch.ones(3, device="cuda") + torch.ones(3, 3),
    lambda: torch.gather(torch.ones(3, 4, device="cuda"), 1, torch.zeros(3, 4, dtype=torch.long)),
    lambda: torch.ones(5)[torch.zeros(2, dtype=torch.long, device="cuda")],
], ids=["matmul", "add", "gather", "index"])
def test_on_a_gpu_tensors_on_two_devices_are_told_so(call):
    with pytest.raises(RuntimeError) as raised:
        call()
    meaning = compare.torch_error_meaning(str(raised.value))
    assert meaning and "device=q.device" in meaning, str(raised.value)
