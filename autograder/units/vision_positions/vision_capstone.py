"""The fourth unit's experiment: a tiny vision transformer that must read the arrangement of an image's patches.

Each image is a grid of patches, mostly dark noise. One patch is a red square, one a blue square, and up to two
are green squares that do not count. The label says how the red and blue squares stand:

* 0: on the same row, the red one left of the blue one;
* 1: in the same column, the red one above the blue one.

Images come in twins: the image of label 0 and the image of label 1 of a pair hold the very same patches, each
pixel of them, only placed at other cells of the grid. A model without positions reads a bag of patches, and the
two twins are the same bag: it gives both the same answer, so it gets exactly one of each pair right, 50%, by
construction. The same holds for a model whose positions are there but whose patches have been shuffled: what
it was taught to read is gone.

A tiny ViT (a patch embedding, a class token, two blocks of width 32 with two heads of 16, the class token's
output read by a linear layer) is trained on grids of 4 x 4 patches once per way of giving it position:

* ``none``: no position at all;
* ``2D sin-cos``: your ``sincos_2d_table``, added to the patch vectors (the class token's row is zeros);
* ``learned``: a table learned with the model, one row per patch and one for the class token;
* ``2D RoPE``: your ``apply_rope_2d`` on each head's queries and keys, the class token not turned;
* ``Swin bias``: your ``window_scores`` (with your ``window_relative_index``), one window covering the whole
  grid, a learned number per offset and head added to the patches' scores (the class token's scores get none).

Each model is then read on held-out images, at the trained grid (as they are, and with each image's patches
shuffled) and at a larger grid of 8 x 8 patches that it never saw: the sine-cosine table is built again at the new
grid; the learned table is resized by your ``resize_learned_grid`` (the class token's row kept apart); RoPE turns
the new grid's patches by their rows and columns; Swin's ((2W - 1)^2, H) table of offsets is resized as a
(2W - 1) x (2W - 1) image by your ``resize_learned_grid`` with no prefix rows, as Swin does when it is fine-tuned at
a larger window. Nothing is tuned after the resizing.

This file holds no answer: the models call the functions they are given (the notebook's ``globals()``, or a
module). A method whose functions are not written yet, or raise, is left out with the reason, and a model whose
reading at the larger grid needs a function not written yet is read at the trained grid only. Everything is drawn
from ``seed``: the same seed, the same table. The training runs on one thread (see ``one_thread``).

Run it on its own with the kit's references (it prints the table and the conclusions, and can save the figure):
``python -m autograder.units.vision_positions.vision_capstone --figure docs/units/vision_positions_capstone.png``.
"""

import contextlib
import math
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

PATCH = 4  # pixels per side of a patch
TRAINED_GRID = 4  # patches per side of the training images
LARGER_GRID = 8  # patches per side of the images read after training
D_MODEL, HEADS, LAYERS = 32, 2, 2  # two heads of 16: a multiple of 4, as the 2D methods need
DISTRACTORS = 2  # at most this many green squares, which do not count
NOISE = 0.1  # the standard deviation of the noise on every pixel
RED, BLUE, GREEN = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0)
PAIRS = 32  # twin pairs per training batch: 64 images
STEPS = 600  # training steps of each model
LEARNED_STD = 1.0  # the learned table's first values (see TinyViT)
BIAS_STD = 1.0  # Swin's table's first values (see Attention)
TEST_PAIRS = 500  # twin pairs read per grid: 1000 images
METHODS = ("none", "2D sin-cos", "learned", "2D RoPE", "Swin bias")
# The functions a method trains with, and the one its reading at the larger grid needs besides.
NEEDS = {"none": (), "2D sin-cos": ("sincos_2d_table",), "learned": (), "2D RoPE": ("apply_rope_2d",),
         "Swin bias": ("window_scores", "window_relative_index")}
RESIZES = {"learned": "resize_learned_grid", "Swin bias": "resize_learned_grid"}
PAPERS = {"none": "", "2D sin-cos": "MoCo v3, MAE", "learned": "ViT, DeiT", "2D RoPE": "RoPE-ViT, EVA-02",
          "Swin bias": "Swin"}


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block: these models are tiny (17 tokens of width 32), each operation too small
    to share out, and torch's pool waits for every thread at each one, so a busy process beside the kernel slows two
    threads far more than one."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# --- the images ---------------------------------------------------------------------------------------------------

def twin_images(pairs, grid, generator):
    """``pairs`` twin pairs of images of ``grid`` x ``grid`` patches, drawn from ``generator``.

    Returns (images, labels): images (2 * pairs, 3, grid * PATCH, grid * PATCH) float32, labels (2 * pairs,) int64.
    Image 2i has label 0 (the red square on the same row as the blue one, left of it); image 2i + 1 has label 1 (in
    the same column, above it); both hold the same patches, the red and blue squares moved to their cells and every
    other patch (dark noise, or a green square) to a random cell of what is left."""
    cells = grid * grid
    # The patches of each pair: the red square, the blue one, 0 .. DISTRACTORS green ones, then dark ones; noise on
    # every pixel. (pairs, cells, 3, PATCH, PATCH)
    content = NOISE * torch.randn(pairs, cells, 3, PATCH, PATCH, generator=generator)
    colours = torch.zeros(pairs, cells, 3)
    colours[:, 0] = torch.tensor(RED)
    colours[:, 1] = torch.tensor(BLUE)
    greens = torch.randint(0, DISTRACTORS + 1, (pairs, 1), generator=generator)  # (pairs, 1)
    slot = torch.arange(cells)[None, :]  # (1, cells)
    colours[(slot >= 2) & (slot < 2 + greens)] = torch.tensor(GREEN)
    content = content + colours[..., None, None]
    # Where the red and blue squares stand: label 0 on one row, label 1 in one column, red first.
    line = torch.randint(0, grid, (2, pairs), generator=generator)  # the row (label 0), the column (label 1)
    ends = torch.rand(2, pairs, grid, generator=generator).argsort(-1)[..., :2].sort(-1).values  # (2, pairs, 2)
    red = torch.stack((line[0] * grid + ends[0, :, 0], ends[1, :, 0] * grid + line[1]))  # (2, pairs): cells
    blue = torch.stack((line[0] * grid + ends[0, :, 1], ends[1, :, 1] * grid + line[1]))  # (2, pairs)
    # Every other patch to a random free cell: sorting random keys with the red and blue cells' keys set below
    # every other puts those two cells first, the rest in a random order.
    keys = torch.rand(2, pairs, cells, generator=generator)
    keys.scatter_(2, red[..., None], -2.0)
    keys.scatter_(2, blue[..., None], -1.0)
    where = keys.argsort(-1)  # (2, pairs, cells): the cell of patch j of the pair
    patches = torch.empty(2, pairs, cells, 3 * PATCH * PATCH)
    patches.scatter_(2, where[..., None].expand(-1, -1, -1, 3 * PATCH * PATCH),
                     content.reshape(1, pairs, cells, -1).expand(2, -1, -1, -1))
    images = (patches.transpose(0, 1).reshape(2 * pairs, grid, grid, 3, PATCH, PATCH)
              .permute(0, 3, 1, 4, 2, 5).reshape(2 * pairs, 3, grid * PATCH, grid * PATCH))  # pair by pair
    labels = torch.arange(2).repeat(pairs)  # 0, 1, 0, 1, ...
    return images, labels


def shuffled_patches(images, generator):
    """The same images with their patches moved to random cells (a new order for each image)."""
    count, channels, height, width = images.shape
    rows, columns = height // PATCH, width // PATCH
    patches = (images.reshape(count, channels, rows, PATCH, columns, PATCH).permute(0, 2, 4, 1, 3, 5)
               .reshape(count, rows * columns, -1))  # (count, cells, 3 * PATCH * PATCH)
    order = torch.rand(count, rows * columns, generator=generator).argsort(-1)  # (count, cells)
    patches = patches.gather(1, order[..., None].expand_as(patches))
    return (patches.reshape(count, rows, columns, channels, PATCH, PATCH).permute(0, 3, 1, 4, 2, 5)
            .reshape(count, channels, height, width))


# --- the model ----------------------------------------------------------------------------------------------------

def _function(functions, name):
    return functions.get(name) if isinstance(functions, dict) else getattr(functions, name, None)


class Attention(nn.Module):
    """Self-attention over the class token and the patches, with position in its scores where ``method`` says."""

    def __init__(self, method, functions, trained_grid):
        super().__init__()
        self.method, self.functions, self.head_dim = method, functions, D_MODEL // HEADS
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        if method == "Swin bias":  # one number per offset and head inside the one window, as Swin initialises it
            self.bias_table = nn.Parameter(torch.randn((2 * trained_grid - 1) ** 2, HEADS) * BIAS_STD)

    def forward(self, x, grid, bias_table=None):
        batch, tokens, _ = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, HEADS, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, H, T, dh)
        scale = 1.0 / math.sqrt(self.head_dim)
        if self.method == "2D RoPE":
            turn = _function(self.functions, "apply_rope_2d")
            q, k = turn(q, grid, grid, prefix_tokens=1), turn(k, grid, grid, prefix_tokens=1)
        scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, T)
        if self.method == "Swin bias":
            patches = _function(self.functions, "window_scores")(q[:, :, 1:], k[:, :, 1:], bias_table, grid, grid,
                                                                   scale=scale)  # (B, H, N, N): one window
            scores = torch.cat((scores[:, :, :1], torch.cat((scores[:, :, 1:, :1], patches), dim=-1)), dim=-2)
        mixed = scores.softmax(-1) @ v  # (B, H, T, dh)
        return self.out(mixed.transpose(1, 2).reshape(batch, tokens, D_MODEL))


class Block(nn.Module):
    def __init__(self, method, functions, trained_grid):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.attention = Attention(method, functions, trained_grid)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, grid, bias_table=None):
        x = x + self.attention(self.norm1(x), grid, bias_table)
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    """Patches of PATCH x PATCH pixels, a class token, position by ``method``, LAYERS blocks, two classes."""

    def __init__(self, method, functions, trained_grid=TRAINED_GRID):
        super().__init__()
        self.method, self.functions, self.trained_grid = method, functions, trained_grid
        self.embed = nn.Conv2d(3, D_MODEL, PATCH, stride=PATCH)  # one vector per patch
        self.class_token = nn.Parameter(torch.randn(1, 1, D_MODEL) * 0.02)
        if method == "learned":  # a row for the class token, then one per patch, row by row
            self.table = nn.Parameter(torch.randn(1 + trained_grid * trained_grid, D_MODEL) * LEARNED_STD)
        self.blocks = nn.ModuleList(Block(method, functions, trained_grid) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, 2)
        self._read_at = {}  # {grid: what the positions are there}, for the grids read after training

    def positions(self, grid):
        """What the model adds or uses at ``grid``: the table (1 + grid^2, d) added to the tokens, or the bias
        tables of the blocks, or None. At the trained grid the learned ones are the parameters themselves."""
        trained = self.trained_grid
        if self.method == "2D sin-cos":
            if grid not in self._read_at:
                self._read_at[grid] = _function(self.functions, "sincos_2d_table")(grid, grid, D_MODEL,
                                                                                  prefix_tokens=1)
            return self._read_at[grid]
        if self.method not in RESIZES:
            return None
        if grid == trained:
            return self.table if self.method == "learned" else [block.attention.bias_table for block in self.blocks]
        if grid not in self._read_at:
            resize = _function(self.functions, "resize_learned_grid")
            with torch.no_grad():
                if self.method == "learned":
                    self._read_at[grid] = resize(self.table.detach(), (trained, trained), (grid, grid),
                                                 prefix_tokens=1)
                else:  # Swin: the table of (2W - 1) x (2W - 1) offsets is an image with a channel per head
                    side, new = 2 * trained - 1, 2 * grid - 1
                    self._read_at[grid] = [resize(block.attention.bias_table.detach(), (side, side), (new, new),
                                                  prefix_tokens=0) for block in self.blocks]
        return self._read_at[grid]

    def forward(self, images):
        grid = images.shape[-1] // PATCH
        x = self.embed(images).flatten(2).transpose(1, 2)  # (B, N, d), patches row by row
        x = torch.cat((self.class_token.expand(x.shape[0], 1, D_MODEL), x), dim=1)  # (B, 1 + N, d)
        positions = self.positions(grid)
        tables = positions if self.method == "Swin bias" else [None] * LAYERS
        if self.method in ("2D sin-cos", "learned"):
            x = x + positions.to(x)
        for block, table in zip(self.blocks, tables):
            x = block(x, grid, table)
        return self.head(self.norm(x[:, 1:].mean(1)))  # (B, 2): from the mean of the patches' outputs


def _said(error):
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def why_unavailable(method, functions, grid=TRAINED_GRID):
    """Why ``method`` cannot train (or, with ``grid`` larger than the trained grid, be read there) with these
    functions, or "" when it can: a tiny model is run on two images, backwards too at the trained grid."""
    needed = NEEDS[method] + ((RESIZES[method],) if grid != TRAINED_GRID and method in RESIZES else ())
    missing = [name for name in needed if not callable(_function(functions, name))]
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not defined"
    try:
        torch.manual_seed(0)
        model = TinyViT(method, functions)
        images, _ = twin_images(1, grid, torch.Generator().manual_seed(0))
        if grid == TRAINED_GRID:
            logits = model(images)
            logits.sum().backward()
        else:
            with torch.no_grad():
                logits = model(images)
        if tuple(logits.shape) != (2, 2) or not bool(torch.isfinite(logits).all()):
            return f"the model's output is not two finite numbers an image (shape {tuple(logits.shape)})"
    except NotImplementedError as error:
        return f"not written yet ({_said(error)})" if str(error).strip() else "not written yet"
    except Exception as error:  # noqa: BLE001  (the student's code: any error is a reason to leave it out)
        return f"it raised {_said(error)}"
    return ""


# --- training and reading -----------------------------------------------------------------------------------------

def train(method, functions, *, seed=0, steps=STEPS, pairs=PAIRS, lr=3e-3):
    """A TinyViT with ``method`` trained on fresh twin pairs at the trained grid for ``steps`` steps."""
    torch.manual_seed(seed)
    model = TinyViT(method, functions)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        images, labels = twin_images(pairs, TRAINED_GRID, generator)
        loss = F.cross_entropy(model(images), labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    model.eval()
    return model, losses


@torch.no_grad()
def accuracy(model, images, labels):
    return (model(images).argmax(-1) == labels).double().mean().item()


@dataclass
class Reading:
    """One method's model, read on held-out images."""

    name: str
    trained: float  # accuracy at the trained grid
    shuffled: float  # accuracy at the trained grid with each image's patches shuffled
    larger: float = None  # accuracy at the larger grid, or None where it was not read there
    not_larger: str = ""  # why it was not read at the larger grid
    final_loss: float = float("nan")  # the mean training loss over the last 20 steps
    seconds: float = 0.0


@dataclass
class Experiment:
    readings: dict  # {name: Reading}, in METHODS' order
    left_out: dict  # {name: why}
    settings: dict
    seconds: float
    losses: dict = field(default_factory=dict)  # {name: [training loss per step]}

    @property
    def grids(self):
        return self.settings["trained_grid"], self.settings["larger_grid"]

    def table(self):
        """The readings as text: the accuracy at the trained grid, with the patches shuffled, at the larger grid."""
        trained, larger = self.grids
        columns = (f"{trained}x{trained}", "shuffled", f"{larger}x{larger}", f"{larger}x{larger} - {trained}x{trained}")
        head = f"{'method':<12} | " + " | ".join(f"{column:>11}" for column in columns) + f" | {'papers':<16}"
        lines = [head, "-" * len(head)]
        for name, reading in self.readings.items():
            cells = [f"{100 * reading.trained:>10.1f}%", f"{100 * reading.shuffled:>10.1f}%"]
            if reading.larger is None:
                cells += [f"{'not read':>11}", f"{'-':>11}"]
            else:
                cells += [f"{100 * reading.larger:>10.1f}%", f"{100 * (reading.larger - reading.trained):>+11.1f}"]
            lines.append(f"{name:<12} | " + " | ".join(cells) + f" | {PAPERS[name]:<16}")
        for name, reading in self.readings.items():
            if reading.not_larger:
                lines.append(f"{name}: not read at {larger}x{larger}: {reading.not_larger}")
        for name, why in self.left_out.items():
            lines.append(f"{name:<12} | left out: {why}")
        lines.append(f"(accuracy on {2 * self.settings['test_pairs']} held-out images a grid, half of each label; "
                     f"{self.settings['steps']} steps of {2 * self.settings['pairs']} images at {trained}x{trained} "
                     f"patches; seed {self.settings['seed']}; {self.seconds:.0f} s in all)")
        return "\n".join(lines)


@one_thread()
def train_small_read_large(functions, *, seed=0, steps=STEPS, test_pairs=TEST_PAIRS, progress=None):
    """Train one TinyViT per method at the trained grid and read each at the trained grid, with shuffled patches,
    and at the larger grid (see the module's docstring). ``functions``: the notebook's ``globals()``, or a module.
    Returns an ``Experiment``."""
    started = time.perf_counter()
    functions = dict(functions) if isinstance(functions, dict) else vars(functions)
    trained_grid, larger_grid = TRAINED_GRID, LARGER_GRID
    tests = {grid: twin_images(test_pairs, grid, torch.Generator().manual_seed(seed + 1000 + grid))
             for grid in (trained_grid, larger_grid)}
    shuffled = shuffled_patches(tests[trained_grid][0], torch.Generator().manual_seed(seed + 2000))
    readings, left_out, losses = {}, {}, {}
    for name in METHODS:
        why = why_unavailable(name, functions)
        if why:
            left_out[name] = why
            continue
        clock = time.perf_counter()
        model, losses[name] = train(name, functions, seed=seed, steps=steps)
        reading = Reading(name, accuracy(model, *tests[trained_grid]),
                          accuracy(model, shuffled, tests[trained_grid][1]),
                          final_loss=sum(losses[name][-20:]) / len(losses[name][-20:]))
        reading.not_larger = why_unavailable(name, functions, larger_grid)
        if not reading.not_larger:
            try:
                reading.larger = accuracy(model, *tests[larger_grid])
            except Exception as error:  # noqa: BLE001  (the student's code)
                reading.not_larger = f"it raised {_said(error)}"
        reading.seconds = time.perf_counter() - clock
        readings[name] = reading
        if progress:
            progress(name, reading.seconds)
    return Experiment(readings, left_out,
                      {"seed": seed, "steps": steps, "pairs": PAIRS, "test_pairs": test_pairs,
                       "trained_grid": trained_grid, "larger_grid": larger_grid},
                      time.perf_counter() - started, losses)


# --- what the run shows -------------------------------------------------------------------------------------------

def chance_band(images):
    """Half the width, in accuracy, of the band a coin's accuracy falls in 95 times in 100 over ``images`` images."""
    return 1.96 * math.sqrt(0.25 / images)


def conclusions(experiment):
    """Sentences built from the run's numbers, never from what a run is expected to show."""
    trained, larger = (f"{grid}x{grid}" for grid in experiment.grids)
    readings = experiment.readings
    if not readings:
        return ["No model was trained in this run, so there is nothing to compare."]
    count = 2 * experiment.settings["test_pairs"]
    band = chance_band(count)
    at_chance = lambda value: abs(value - 0.5) <= band  # noqa: E731
    said = [f"A coin would score 50% give or take {100 * band:.1f} points over these {count} images (95 times in "
            f"100): within that band is chance."]
    if "none" in readings:
        none = readings["none"]
        said.append(f"Without positions: {100 * none.trained:.1f}% at {trained}"
                    + (f" and {100 * none.larger:.1f}% at {larger}" if none.larger is not None else "")
                    + ": each image's twin holds the same patches, so the model answers both alike and is right on "
                      "exactly one of the two.")
    placed = {name: reading for name, reading in readings.items() if name != "none"}
    if placed:
        ranked = sorted(placed, key=lambda name: -placed[name].trained)
        said.append(f"At the trained grid, {trained}: " + ", ".join(
            f"{name} {100 * placed[name].trained:.1f}%" for name in ranked) + ".")
        lost = [name for name in ranked if at_chance(placed[name].shuffled)]
        kept = [name for name in ranked if name not in lost]
        said.append(f"With each image's patches shuffled, {len(lost)} of {len(ranked)} models with positions fall to "
                    f"chance" + (f" ({', '.join(lost)})" if lost else "")
                    + (f"; not to chance: " + ", ".join(f"{name} {100 * placed[name].shuffled:.1f}%" for name in kept)
                       if kept else "") + ".")
    read = {name: reading for name, reading in placed.items() if reading.larger is not None}
    if read:
        ranked = sorted(read, key=lambda name: -read[name].larger)
        said.append(f"At {larger}, a grid never seen in training: " + ", ".join(
            f"{name} {100 * read[name].larger:.1f}% ({100 * (read[name].larger - read[name].trained):+.1f})"
            for name in ranked) + f"; best: {ranked[0]}.")
        fell = [name for name in ranked if at_chance(read[name].larger) and not at_chance(read[name].trained)]
        if fell:
            said.append(f"Above chance at {trained} but at chance at {larger}: {', '.join(fell)}.")
        held = [name for name in ranked if read[name].larger >= read[name].trained - band]
        if held:
            said.append(f"Within {100 * band:.1f} points of its own accuracy at {trained}: {', '.join(held)}.")
        if {"learned", "2D sin-cos"} <= set(read):
            learned, sincos = read["learned"].larger, read["2D sin-cos"].larger
            said.append(f"The learned table resized reads {larger} {'better' if learned > sincos else 'worse'} than "
                        f"the sine-cosine table built again there ({100 * learned:.1f}% against "
                        f"{100 * sincos:.1f}%).")
    unread = [name for name, reading in placed.items() if reading.not_larger]
    if unread:
        said.append(f"Not read at {larger}: " + "; ".join(f"{name} ({placed[name].not_larger})" for name in unread)
                    + ".")
    return said


def figure_of(experiment):
    """Accuracy per method at the trained grid, with shuffled patches, and at the larger grid: the lesson's figure
    and the docs'."""
    import matplotlib.pyplot as plt

    trained, larger = (f"{grid}x{grid}" for grid in experiment.grids)
    names = list(experiment.readings)
    bars = ((f"trained grid, {trained}", "trained", "C0"), (f"{trained}, patches shuffled", "shuffled", "C7"),
            (f"larger grid, {larger}", "larger", "C1"))
    figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.8))
    width = 0.8 / len(bars)
    for number, (label, attribute, colour) in enumerate(bars):
        values = [getattr(experiment.readings[name], attribute) for name in names]
        places = [at for at, value in enumerate(values) if value is not None]
        axis.bar([at + (number - 1) * width for at in places], [100 * values[at] for at in places], width,
                 label=label, color=colour)
    band = 100 * chance_band(2 * experiment.settings["test_pairs"])
    axis.axhspan(50 - band, 50 + band, color="0.85", zorder=0, label="chance (a coin, 95 in 100)")
    axis.set_xticks(range(len(names)), names)
    axis.set(ylim=(0, 105), ylabel="held-out accuracy (%)",
             title=f"trained at {trained} patches, read at {larger}: is red left of blue, or above it?")
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figure


def main(argv=None, references=None):
    """The experiment on the kit's reference (``references``: {unit name: its reference module}, which
    ``python -m autograder capstone --unit vision_positions`` passes; the kit's own where it is not given)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autograder.units.vision_positions.vision_capstone",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=STEPS, help="training steps of each model")
    parser.add_argument("--figure", metavar="PNG", help="save the figure there")
    args = parser.parse_args(argv)
    if references is None:
        try:
            from autograder.core import units  # this unit's reference: the command is the kit's
        except ImportError:
            raise SystemExit("this command runs in the kit (python -m autograder capstone --unit vision_positions); "
                             "in the notebook, the last part runs the experiment on your functions") from None
        references = {"vision_positions": units.get("vision_positions").reference}
    experiment = train_small_read_large(references["vision_positions"], seed=args.seed, steps=args.steps,
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
