"""The third unit's experiment: every way of giving position in the course, trained short and read long.

The first unit's tiny language model (``capstone.py``: two blocks, width 64, four heads, the kit's short stories) is
trained at a context of L = 32 words once per method that needs its own weights, and each model then reads held-out
windows of L, 2L, 4L and 8L words:

* the first unit's ``sinusoidal`` table, ``learned`` table and ``T5`` bias;
* the second unit's ``RoPE`` and ``ALiBi``, and RoPE read with position interpolation (every position divided by 8);
* this unit's NTK-aware, dynamic NTK, YaRN and Llama 3 scalings, read from the same trained RoPE model.

Position interpolation and the four scalings of this unit change nothing but the frequencies at which RoPE turns
the queries and keys, so they are readings of ONE trained RoPE model: five models are trained in all, and every
RoPE reading is zero-shot (Chen et al. tune a little after interpolating; here no method is tuned, so that the
comparison is the frequencies alone). The static scalings are set for the longest window (factor 8) and read every
window with it, as a model configured once for 8x would; dynamic NTK sets its factor from each window's length.

Which code runs: the first two units' functions are their references where the kit is installed (the course's own
run, the benchmark, the documentation's figure), else your own work on that unit: its notebook or .py file
(``positional_encodings.ipynb`` or ``.py``, ``rotary_alibi.ipynb`` or ``.py``) beside this notebook, or in that
unit's folder beside this one (``../positional_encodings/``, as the course's zips unpack). A notebook's cells run as
the self-checks run them: your own cells only, each on its own, none of the lesson's. Without any, RoPE runs on the
given ``apply_rotary`` and the other earlier methods are left out, and the report says so. This unit's methods are always your own functions
(the notebook's ``globals()``); one that is not written, or raises, is left out with the reason. This file holds no
answer: it calls the functions it is given.

Run it on its own with the kit's references (it prints the table and the conclusions and can save the figure):
``python -m autograder.units.long_context.long_capstone --figure docs/units/long_context_capstone.png``.
"""

import contextlib
import math
import os
import time
import types
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

try:  # in the kit
    from autograder.units.positional_encodings import capstone
except ImportError:  # beside the notebook: the first unit's tiny model, shipped with this unit
    import capstone

TRAINED_LENGTH = 32  # L: the context every model is trained at
TIMES = (1, 2, 4, 8)  # the windows read: L, 2L, 4L, 8L words
FACTOR = 8.0  # the static scalings are set for the longest window
DYNAMIC_FACTOR = 1.0  # dynamic NTK's s = factor * n / L - (factor - 1) is then n / L: just as far as a window needs
END = TRAINED_LENGTH // 2  # the loss is read over the last END words of each window (each has END or more before it)
WINDOWS = 96  # held-out windows per length, the same ones for every method
EARLIER_UNITS = ("positional_encodings", "rotary_alibi")
TRAINED = ("sinusoidal", "learned", "t5", "rope", "alibi")  # capstone.py's names of the methods trained here
NAMES = {"sinusoidal": "sinusoidal", "learned": "learned", "t5": "T5", "rope": "RoPE", "alibi": "ALiBi"}
# The readings of the trained RoPE model, by the functions each needs.
SCALINGS = {
    "RoPE + interpolation": ("scaled_positions",),
    "RoPE + NTK": ("ntk_inverse_frequencies", "scaled_rope_scores"),
    "RoPE + dynamic NTK": ("dynamic_ntk_inverse_frequencies", "scaled_rope_scores"),
    "RoPE + YaRN": ("yarn_inverse_frequencies", "yarn_attention_scale", "scaled_rope_scores"),
    "RoPE + Llama 3": ("llama3_inverse_frequencies", "scaled_rope_scores"),
}
UNIT_OF = {"sinusoidal": 1, "learned": 1, "T5": 1, "RoPE": 2, "ALiBi": 2, "RoPE + interpolation": 2}


# --- where the functions come from ------------------------------------------------------------------------------

def _kit_reference(name):
    """The module of an earlier unit's reference where the kit is installed; None in a student's folder."""
    try:
        from autograder.core import units
    except ImportError:
        return None
    return units.get(name).reference


def own_work(name, folder=None):
    """The path of a student's own work on the earlier unit ``name``: ``NAME.ipynb`` or ``NAME.py`` in ``folder``
    (the notebook's, the current folder by default) or in ``folder/../NAME/`` (that unit's own folder, unpacked
    beside this one); None where there is none."""
    here = Path.cwd() if folder is None else Path(folder)
    for place in (here, here.parent / name):
        for suffix in (".ipynb", ".py"):
            if (place / f"{name}{suffix}").is_file():
                return place / f"{name}{suffix}"
    return None


def run_own_work(path):
    """{name: value} that the student's file defines, its code cells run each on its own as the self-checks run
    them (an error in one does not hide the others), and the errors, one line each. The file is read by the
    course's notebook loader, shipped beside the notebook (``notebook_loader.py``): the lesson's own cells
    (checks, demonstrations, pictures) are left out."""
    from notebook_loader import LoadError, load

    module = types.ModuleType(path.stem)
    module.__file__ = str(path)
    try:
        submission = load(path)
    except LoadError as error:
        return {}, [str(error)]
    errors = []
    for chunk in submission.chunks:
        try:
            exec(compile(chunk["source"], chunk["label"], "exec"), module.__dict__)  # noqa: S102  (the student's own)
        except Exception as error:  # noqa: BLE001  (the student's own code: the other cells may still define some)
            errors.append(f"{chunk['label']} raised {type(error).__name__}: {str(error)[:200]}")
    return vars(module), errors


def _earlier_unit(name):
    """(functions, where they come from) of an earlier unit: the kit's reference, else the student's own work on
    that unit (``own_work``), else (None, why not)."""
    reference = _kit_reference(name)
    if reference is not None:
        return vars(reference), "the kit's reference"
    path = own_work(name)
    if path is None:
        return None, (f"not here (neither the kit nor your {name}.ipynb or {name}.py, beside this notebook or in "
                      f"../{name}/): left out")
    found, errors = run_own_work(path)
    where = f"your {os.path.relpath(path)}"  # rotary_alibi.ipynb, or ../rotary_alibi/rotary_alibi.ipynb
    return found, where + (f" ({len(errors)} cell(s) raised: {errors[0]})" if errors else "")


def course_functions(own):
    """{name: function}: the first two units' functions (``_earlier_unit``) with ``own`` (this unit's: the
    notebook's ``globals()`` or the reference module) beside them, and {unit: where its functions come from}."""
    own = dict(own) if isinstance(own, dict) else vars(own)
    functions, sources = dict(own), {}
    for unit in EARLIER_UNITS:
        found, sources[unit] = _earlier_unit(unit)
        if found:
            functions.update({name: value for name, value in found.items() if callable(value)
                              and not name.startswith("_")})
    if not callable(functions.get("rope_scores")) and callable(functions.get("apply_rotary")):
        rotate = functions["apply_rotary"]  # the given second unit's rotation: RoPE's scores need nothing more

        def scores_of_given_rotation(q, k, *, positions_q, positions_k):
            return rotate(q, positions_q) @ rotate(k, positions_k).transpose(-2, -1) / math.sqrt(q.shape[-1])

        functions["rope_scores"] = scores_of_given_rotation
        sources["rotary_alibi"] += "; RoPE itself runs on the given apply_rotary"
    return functions, sources


# --- reading a trained RoPE model at other frequencies ----------------------------------------------------------

class FrequencyAttention(nn.Module):
    """A trained RoPE attention read at other frequencies: its own weights, its scores from ``scores(q, k)``."""

    def __init__(self, trained, scores):
        super().__init__()
        self.trained, self.scores = trained, scores

    def forward(self, x):
        trained = self.trained
        batch, length, d_model = x.shape
        q, k, v = trained.qkv(x).view(batch, length, 3, trained.heads, trained.head_dim).permute(2, 0, 3, 1, 4)
        scores = self.scores(q, k)  # (B, H, L, L)
        future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
        mixed = scores.masked_fill(future, float("-inf")).softmax(-1) @ v  # (B, H, L, dh)
        return trained.out(mixed.transpose(1, 2).reshape(batch, length, d_model))


@contextlib.contextmanager
def read_with(model, scores):
    """Every attention of ``model`` scores with ``scores(q, k)`` inside the block, as trained after it."""
    trained = [block.attention for block in model.blocks]
    for block in model.blocks:
        block.attention = FrequencyAttention(block.attention, scores)
    try:
        yield model
    finally:
        for block, attention in zip(model.blocks, trained):
            block.attention = attention


def rotate_half_order(head_dim):
    """The coordinates' order that makes the interleaved pairs (2i, 2i + 1), in which the model was trained (the
    second unit's default), the rotate-half pairs (i, i + dh/2) of ``scaled_rope_scores``: q and k reordered alike
    keep every dot product."""
    return torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))  # (dh,)


def rope_frequencies(head_dim, base=10000.0):
    """RoPE's own theta_i = base ** (-2i / dh), the frequencies the model was trained at: (dh/2,) float32."""
    return (base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)).to(torch.float32)


def scaling_settings(functions, head_dim):
    """{reading: frequencies(length) -> (theta, attention scale)} for this unit's scalings, set for FACTOR times
    the trained length, and {reading: why it is left out} for those whose functions are missing or raise."""
    trained = TRAINED_LENGTH
    calls = {
        "RoPE + NTK": lambda length: (functions["ntk_inverse_frequencies"](head_dim, factor=FACTOR), 1.0),
        "RoPE + dynamic NTK": lambda length: (functions["dynamic_ntk_inverse_frequencies"](
            head_dim, length=length, trained_length=trained, factor=DYNAMIC_FACTOR), 1.0),
        "RoPE + YaRN": lambda length: (
            functions["yarn_inverse_frequencies"](head_dim, factor=FACTOR, trained_length=trained),
            functions["yarn_attention_scale"](FACTOR)),
        "RoPE + Llama 3": lambda length: (functions["llama3_inverse_frequencies"](
            head_dim, base=10000.0, factor=FACTOR, trained_length=trained), 1.0),
    }
    settings, left_out = {}, {}
    for name, call in calls.items():
        why = _why_not(SCALINGS[name], functions)
        if not why:
            try:
                for length in (trained, FACTOR * trained):
                    theta, scale = call(int(length))
                    if tuple(theta.shape) != (head_dim // 2,) or not bool(torch.isfinite(theta).all()):
                        why = (f"its frequencies are of shape {tuple(theta.shape)}, or not finite; expected "
                               f"({head_dim // 2},)")
                    elif not math.isfinite(scale):
                        why = f"its attention scale is {scale}"
            except NotImplementedError:
                why = f"{' or '.join(SCALINGS[name][:-1])} is not written yet"
            except Exception as error:  # noqa: BLE001  (the student's code: any error leaves the reading out)
                why = f"it raised {type(error).__name__}: {str(error)[:200]}"
        if why:
            left_out[name] = why
        else:
            settings[name] = call
    return settings, left_out


def _why_not(names, functions):
    missing = [name for name in names if not callable(functions.get(name))]
    return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not defined" if missing else ""


def scores_agree(functions, head_dim):
    """"" when ``scaled_rope_scores`` at RoPE's own frequencies gives the trained model's scores (``rope_scores``),
    else what differs: a reading through it is then no reading of the trained model."""
    generator = torch.Generator().manual_seed(7)
    q, k = torch.randn(2, 3, 9, head_dim, generator=generator), torch.randn(2, 3, 9, head_dim, generator=generator)
    positions = torch.arange(9)
    order = rotate_half_order(head_dim)
    try:
        ours = functions["scaled_rope_scores"](q[..., order], k[..., order], rope_frequencies(head_dim))
        trained = functions["rope_scores"](q, k, positions_q=positions, positions_k=positions)
        gap = (ours - trained).abs().max().item()
    except NotImplementedError:
        return "scaled_rope_scores is not written yet"
    except Exception as error:  # noqa: BLE001
        return f"scaled_rope_scores raised {type(error).__name__}: {str(error)[:200]}"
    if not gap <= 1e-4:
        return (f"scaled_rope_scores at RoPE's own frequencies differs from the trained model's scores by up to "
                f"{gap:.3g}: its readings would not be readings of the model trained")
    return ""


# --- the experiment ---------------------------------------------------------------------------------------------

@dataclass
class Reading:
    """One method read at every window length."""

    name: str  # "RoPE + YaRN"
    unit: int  # the unit that teaches it: 1, 2 or 3
    losses: dict  # {window length: mean held-out loss over the window's last END words}
    refused: str = ""  # why the model could not read the longer windows ("" when it could)


@dataclass
class Experiment:
    readings: dict  # {name: Reading}, in the course's order
    left_out: dict  # {name: why}
    sources: dict  # {earlier unit: where its functions came from}
    settings: dict
    seconds: float
    training_seconds: dict = field(default_factory=dict)  # {method: seconds}

    @property
    def lengths(self):
        return [time_ * self.settings["trained_length"] for time_ in TIMES]

    def table(self):
        """The readings as text: the loss at each window length, and its rise from L to 8L."""
        head = f"{'method':<21} | {'unit':>4} | " + " | ".join(f"{f'{time_}L = {length}':>9}" for time_, length in
                                                             zip(TIMES, self.lengths)) + f" | {'8L - L':>7}"
        lines = [head, "-" * len(head)]
        for name, reading in self.readings.items():
            cells = [f"{reading.losses[length]:>9.3f}" if length in reading.losses else f"{'refused':>9}"
                     for length in self.lengths]
            rise = rise_of(reading, self.lengths)
            lines.append(f"{name:<21} | {reading.unit:>4} | " + " | ".join(cells) + " | " +
                         (f"{rise:>+7.3f}" if rise is not None else f"{'-':>7}"))
        for name, why in self.left_out.items():
            lines.append(f"{name:<21} | left out: {why}")
        lines.append(f"(loss: nats per word over the last {self.settings['end']} words of {self.settings['windows']} "
                     f"held-out windows; {self.settings['steps']} steps at L = {self.settings['trained_length']}; "
                     f"seed {self.settings['seed']}; {self.seconds:.0f} s in all)")
        return "\n".join(lines)


def rise_of(reading, lengths):
    """The loss at the longest window minus the loss at L, or None where the model refused the longest."""
    if lengths[-1] not in reading.losses or lengths[0] not in reading.losses:
        return None
    return reading.losses[lengths[-1]] - reading.losses[lengths[0]]


def _read(model, stream, lengths, seed, windows, end):
    """{length: mean held-out loss over the last ``end`` positions of windows ``length`` long}, and why a length was
    refused ("" if none). The windows of a length are the same for every model."""
    losses = {}
    for length in lengths:
        generator = torch.Generator().manual_seed(seed * 1000 + length)
        inputs, targets = capstone._windows(stream, length, windows, generator)
        try:
            with torch.no_grad():
                logits = model(inputs)  # (windows, length, vocabulary)
        except ValueError as error:  # the learned table has no row past its length: its own ValueError
            return losses, f"refused {length} words: {error}"
        each = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(0)  # (length,)
        losses[length] = each[-end:].mean().item()
    return losses, ""


@capstone.one_thread()
def train_short_read_long(own, *, seed=0, steps=200, stories_count=3000, windows=WINDOWS, progress=None):
    """Train the five models at L words and read each method at L, 2L, 4L and 8L (see the module's docstring).

    ``own``: this unit's functions (the notebook's ``globals()``, or a module). Returns an ``Experiment``."""
    started = time.perf_counter()
    functions, sources = course_functions(own)
    trained_length = TRAINED_LENGTH
    lengths = [time_ * trained_length for time_ in TIMES]
    _, held = capstone._streams(stories_count, seed)
    readings, left_out, seconds = {}, {}, {}
    for method in TRAINED:
        name = NAMES[method]
        why = capstone.why_unavailable(method, functions)
        if why:
            left_out[name] = why
            if method == "rope":
                left_out.update({reading: "it reads the RoPE model, which is left out" for reading in SCALINGS})
            continue
        clock = time.perf_counter()
        model = capstone.train_language_model(method, functions, seed=seed, steps=steps, context=trained_length,
                                              stories_count=stories_count).model
        seconds[name] = time.perf_counter() - clock
        losses, refused = _read(model, held, lengths, seed, windows, END)
        readings[name] = Reading(name, UNIT_OF[name], losses, refused)
        if progress:
            progress(name, seconds[name])
        if method != "rope":
            continue
        # The readings of the one RoPE model: interpolation through the second unit's scaled_positions, which the
        # model's own attention calls, then this unit's scalings through scaled_rope_scores.
        if callable(functions.get("scaled_positions")):
            for block in model.blocks:
                block.attention.position_factor = FACTOR
            try:
                losses, _ = _read(model, held, lengths, seed, windows, END)
                readings["RoPE + interpolation"] = Reading("RoPE + interpolation", 2, losses)
            except Exception as error:  # noqa: BLE001
                left_out["RoPE + interpolation"] = f"it raised {type(error).__name__}: {str(error)[:200]}"
            for block in model.blocks:
                block.attention.position_factor = 1.0
        else:
            left_out["RoPE + interpolation"] = "scaled_positions is not defined"
        head_dim = model.blocks[0].attention.head_dim
        disagree = _why_not(("scaled_rope_scores",), functions) or scores_agree(functions, head_dim)
        settings, refused = scaling_settings(functions, head_dim)
        order = rotate_half_order(head_dim)
        for name in (reading for reading in SCALINGS if reading != "RoPE + interpolation"):
            if name in refused or disagree:
                left_out[name] = refused.get(name) or disagree
                continue
            losses = {}
            try:
                for length in lengths:
                    theta, scale = settings[name](length)

                    def scores(q, k, theta=theta, scale=scale):
                        return functions["scaled_rope_scores"](q[..., order], k[..., order], theta,
                                                               attention_scale=scale)

                    with read_with(model, scores):
                        found, _ = _read(model, held, [length], seed, windows, END)
                    losses.update(found)
            except Exception as error:  # noqa: BLE001  (the student's code)
                left_out[name] = f"it raised {type(error).__name__}: {str(error)[:200]}"
                continue
            readings[name] = Reading(name, 3, losses)
    order_of = list(NAMES.values()) + list(SCALINGS)
    readings = {name: readings[name] for name in order_of if name in readings}
    left_out = {name: left_out[name] for name in order_of if name in left_out}
    return Experiment(readings, left_out, sources,
                      {"seed": seed, "steps": steps, "trained_length": trained_length, "factor": FACTOR,
                       "end": END, "windows": windows, "stories": stories_count},
                      time.perf_counter() - started, seconds)


# --- what the run shows -----------------------------------------------------------------------------------------

def conclusions(experiment):
    """Sentences built from the run's numbers, never from what a run is expected to show."""
    short, longest = experiment.lengths[0], experiment.lengths[-1]
    full = {name: reading for name, reading in experiment.readings.items()
            if short in reading.losses and longest in reading.losses}  # the methods that read every window
    if not full:
        return ["No method read the longest windows in this run, so there is nothing to compare."]
    at_short = {name: reading.losses[short] for name, reading in full.items()}
    at_longest = {name: reading.losses[longest] for name, reading in full.items()}
    rises = {name: at_longest[name] - at_short[name] for name in full}
    steady = sorted(full, key=lambda name: abs(rises[name]))
    said = [f"Closest at {longest} words to its own loss at {short}: {steady[0]} ({at_short[steady[0]]:.3f} at "
            f"{short}, {at_longest[steady[0]]:.3f} at {longest}, {rises[steady[0]]:+.3f}); furthest: {steady[-1]} "
            f"({rises[steady[-1]]:+.3f})."]
    ranked = sorted(full, key=at_longest.get)
    said.append(f"Lowest loss at {longest} words: {ranked[0]} ({at_longest[ranked[0]]:.3f}); in order: "
                + ", ".join(f"{name} {at_longest[name]:.3f}" for name in ranked) + ".")
    said += [f"{name} cannot read past {short} words at all: it {reading.refused.split(':')[0]}."
             for name, reading in experiment.readings.items() if reading.refused]
    if "RoPE" in full:
        scaled = [name for name in full if name.startswith("RoPE +")]
        below = [name for name in scaled if at_longest[name] < at_longest["RoPE"]]
        not_below = [name for name in scaled if name not in below]
        said.append(f"Of RoPE's readings, {len(below)} of {len(scaled)} are below RoPE read as trained "
                    f"({at_longest['RoPE']:.3f}) at {longest} words" + (f": {', '.join(below)}" if below else "")
                    + (f"; not below it: {', '.join(not_below)}" if not_below else "") + ".")
        costs = {name: at_short[name] - at_short["RoPE"] for name in scaled}
        static = [name for name in costs if name != "RoPE + dynamic NTK"]
        if static:
            listed = ", ".join(f"{name} {costs[name]:+.3f}" for name in static)
            said.append(f"At {short} words, the trained length, the readings set for "
                        f"{experiment.settings['factor']:g}x cost {listed} against RoPE read as trained"
                        + (f"; dynamic NTK, which scales only past {short} words, {costs['RoPE + dynamic NTK']:+.3f}"
                           if "RoPE + dynamic NTK" in costs else "") + ".")
    best_of = {}
    for name in ranked:  # lowest first: the first of each unit is its best
        best_of.setdefault(full[name].unit, name)
    said.append(f"The best of each unit at {longest} words: " + ", ".join(
        f"unit {unit}: {name} ({at_longest[name]:.3f})" for unit, name in sorted(best_of.items())) + ".")
    return said


def figure_of(experiment):
    """The loss at each window length, one line per method (the figure of the lesson and of the docs)."""
    import matplotlib.pyplot as plt

    styles = {1: ":", 2: "--", 3: "-"}
    markers = "osD^v<>ph*"
    figure, axis = plt.subplots(layout="constrained", figsize=(9, 4.4))
    for number, (name, reading) in enumerate(experiment.readings.items()):
        lengths = sorted(reading.losses)
        axis.plot(lengths, [reading.losses[length] for length in lengths], linestyle=styles[reading.unit],
                  marker=markers[number % len(markers)], color=f"C{number}", label=f"{name} (unit {reading.unit})")
    axis.set_xscale("log", base=2)
    axis.set_xticks(experiment.lengths, [f"{length}\n({length // experiment.lengths[0]}L)"
                                         for length in experiment.lengths])
    axis.set(xlabel="window read (words)", ylabel=f"held-out loss, last {experiment.settings['end']} words",
             title=f"trained on {experiment.lengths[0]} words, read up to {experiment.lengths[-1]}")
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figure


def main(argv=None, references=None):
    """The experiment on the kit's references (``references``: {unit name: its reference module}, which
    ``python -m autograder capstone --unit long_context`` passes; the kit's own where it is not given)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autograder.units.long_context.long_capstone",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200, help="training steps of each model")
    parser.add_argument("--figure", metavar="PNG", help="save the figure there")
    args = parser.parse_args(argv)
    if references is None:
        try:
            from autograder.core import units  # this unit's reference: the command is the kit's
        except ImportError:
            raise SystemExit("this command runs in the kit (python -m autograder capstone --unit long_context); "
                             "in the notebook, part 9 runs the experiment on your functions") from None
        references = {"long_context": units.get("long_context").reference}

    experiment = train_short_read_long(references["long_context"], seed=args.seed, steps=args.steps,
                                       progress=lambda name, seconds: print(f"  {name}: {seconds:.1f} s", flush=True))
    print(experiment.table())
    print("\n".join(conclusions(experiment)))
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        figure_of(experiment).savefig(args.figure, dpi=80)
        print(f"wrote {args.figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
