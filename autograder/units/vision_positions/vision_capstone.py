"""The fourth unit's experiment: a tiny vision transformer that must read how an image's patches are arranged.

Each image is a grid of patches of dark noise. One patch is a red square, one a blue square, and up to two are
green squares that do not count. The label says how the red and blue squares stand:

* 0: on the same row, the red one left of the blue one;
* 1: in the same column, the red one above the blue one.

Images come in twins: the image of label 0 and the image of label 1 of a pair hold the very same patches, pixel for
pixel, placed at other cells of the grid. A model without positions reads a bag of patches, and two twins are the
same bag: it answers both alike and is right on exactly one of them, 50%, by construction. A model with positions
whose patches are shuffled has lost what it was taught to read, and falls to chance too.

A tiny ViT (a patch embedding, a class token, two blocks of width 32 with two heads of 16, the answer read from the
mean of the patches' outputs, as MAE fine-tunes with its ``global_pool`` and Swin classifies) is trained on grids of
4 x 4 patches once per way of giving it position:

* ``none``: no position at all;
* ``sin-cos``: your ``sincos_2d_table``, added to the tokens (the class token's row is zeros);
* ``learned``: a table learned with the model, a row for the class token and one per patch, added to the tokens;
* ``2D RoPE``: your ``apply_rope_2d`` on every head's queries and keys, the class token not turned;
* ``Swin bias``: your ``window_scores`` (with your ``window_relative_index``) in every block, one window covering
  the whole grid: a learned number per offset and head added to the scores between patches (those of the class
  token get none).

Each model is read on held-out images: at the trained grid, as they are and with each image's patches shuffled,
then at grids of 6 x 6 and 8 x 8 patches that it never saw, with nothing tuned:

* ``sin-cos``: the table built again at the new grid (rows and columns past 3 are new to the model);
* ``sin-cos, resized``: the same model, its 4 x 4 table resized by your ``resize_learned_grid`` instead;
* ``learned``: its table resized by your ``resize_learned_grid``, the class token's row kept apart;
* ``2D RoPE``: the new grid's patches turned by their own rows and columns;
* ``Swin bias``: each block's ((2W - 1)^2, H) table of offsets resized as a (2W - 1) x (2W - 1) image with a
  channel per head, by your ``resize_learned_grid`` with no prefix rows, as Swin does when it is fine-tuned with
  larger windows.

The position parameters start at a standard deviation of 1 (the fixed table's scale), not at the papers' 0.02:
started that small, a model this size spends most of its few hundred steps on a plateau before it uses them.

This file holds no answer: the models call the functions they are given (the notebook's ``globals()``, or a
module). A method whose functions are not written yet, or raise, is left out with the reason; a model whose
reading at the larger grids needs a function not written yet is read at the trained grid only, and the table says
why. Everything is drawn from ``seed``: the same seed, the same table. The training runs on one thread.

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
LARGER_GRIDS = (6, 8)  # patches per side of the images read after training, never seen in it
D_MODEL, HEADS, LAYERS = 32, 2, 2  # two heads of 16: a multiple of 4, as the 2D methods need
DISTRACTORS = 2  # at most this many green squares, which do not count
NOISE = 0.1  # the standard deviation of the noise on every pixel
RED, BLUE, GREEN = (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, 1.0, 0.0)
STEPS = 600  # training steps of each model
PAIRS = 16  # twin pairs a training step: 32 images
LEARNING_RATE = 3e-3
POSITION_STD = 1.0  # the learned table's and Swin's tables' first values (see the module's docstring)
TEST_PAIRS = 500  # twin pairs read at each grid: 1000 images
METHODS = ("none", "sin-cos", "learned", "2D RoPE", "Swin bias")  # one model each
# The readings: {reading: (the model it reads, the functions it needs at the larger grids besides its model's)}.
READINGS = {"none": ("none", ()), "sin-cos": ("sin-cos", ()),
            "sin-cos, resized": ("sin-cos", ("resize_learned_grid",)),
            "learned": ("learned", ("resize_learned_grid",)), "2D RoPE": ("2D RoPE", ()),
            "Swin bias": ("Swin bias", ("resize_learned_grid",))}
NEEDS = {"none": (), "sin-cos": ("sincos_2d_table",), "learned": (), "2D RoPE": ("apply_rope_2d",),
         "Swin bias": ("window_scores", "window_relative_index")}
PAPERS = {"none": "", "sin-cos": "MoCo v3, MAE", "sin-cos, resized": "", "learned": "ViT, DeiT",
          "2D RoPE": "RoPE-ViT, EVA-02", "Swin bias": "Swin"}


@contextlib.contextmanager
def one_thread():
    """torch on one thread inside the block: these models are tiny (17 tokens of width 32), each operation too small
    to share out, and torch's pool waits for every thread at each one, so one busy process beside the kernel slows
    two threads far more than one."""
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
    Image 2i has label 0 (the red square on the blue one's row, left of it), image 2i + 1 label 1 (in its column,
    above it); both hold the same patches: the red and blue squares at their cells, every other patch (dark noise,
    or a green square) at a random cell of those left, drawn for each image."""
    if grid < 2:
        raise ValueError(f"two squares on one row or in one column need a grid of 2 x 2 or more, got {grid}")
    cells = grid * grid
    # The patches of each pair: red, blue, 0 .. DISTRACTORS green, then dark; noise on every pixel.
    content = NOISE * torch.randn(pairs, cells, 3, PATCH, PATCH, generator=generator)
    colours = torch.zeros(pairs, cells, 3)
    colours[:, 0], colours[:, 1] = torch.tensor(RED), torch.tensor(BLUE)
    greens = torch.randint(0, DISTRACTORS + 1, (pairs, 1), generator=generator)  # (pairs, 1)
    slot = torch.arange(cells)[None, :]  # (1, cells)
    colours[(slot >= 2) & (slot < 2 + greens)] = torch.tensor(GREEN)
    content = (content + colours[..., None, None]).reshape(pairs, cells, 3 * PATCH * PATCH)
    # Where the two squares stand: label 0 on one row, label 1 in one column, the red one first.
    line = torch.randint(0, grid, (2, pairs), generator=generator)  # (2, pairs): the row of 0, the column of 1
    ends = torch.rand(2, pairs, grid, generator=generator).argsort(-1)[..., :2].sort(-1).values  # (2, pairs, 2)
    red = torch.stack((line[0] * grid + ends[0, :, 0], ends[1, :, 0] * grid + line[1]))  # (2, pairs): cells
    blue = torch.stack((line[0] * grid + ends[0, :, 1], ends[1, :, 1] * grid + line[1]))  # (2, pairs)
    # Sorting random keys, with the red and blue cells' keys set below all others, puts those two cells first and
    # the rest in a random order: patch j of the pair goes to cell where[j].
    keys = torch.rand(2, pairs, cells, generator=generator)
    keys.scatter_(2, red[..., None], -2.0)
    keys.scatter_(2, blue[..., None], -1.0)
    where = keys.argsort(-1)  # (2, pairs, cells)
    patches = torch.empty(2, pairs, cells, content.shape[-1])
    patches.scatter_(2, where[..., None].expand_as(patches), content.expand_as(patches))
    images = (patches.transpose(0, 1).reshape(2 * pairs, grid, grid, 3, PATCH, PATCH)
              .permute(0, 3, 1, 4, 2, 5).reshape(2 * pairs, 3, grid * PATCH, grid * PATCH))  # twins side by side
    return images, torch.arange(2).repeat(pairs)  # labels 0, 1, 0, 1, ...


def patches_of(images):
    """(count, 3, H, W) -> (count, H/PATCH * W/PATCH, 3 * PATCH * PATCH): the patches, row by row."""
    count, channels, height, width = images.shape
    return (images.reshape(count, channels, height // PATCH, PATCH, width // PATCH, PATCH)
            .permute(0, 2, 4, 1, 3, 5).reshape(count, (height // PATCH) * (width // PATCH), -1))


def shuffled_patches(images, generator):
    """The same images with their patches moved to random cells, in a new order for each image."""
    count, channels, height, width = images.shape
    patches = patches_of(images)  # (count, cells, 3 * PATCH * PATCH)
    order = torch.rand(patches.shape[:2], generator=generator).argsort(-1)  # (count, cells)
    patches = patches.gather(1, order[..., None].expand_as(patches))
    return (patches.reshape(count, height // PATCH, width // PATCH, channels, PATCH, PATCH)
            .permute(0, 3, 1, 4, 2, 5).reshape(count, channels, height, width))


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
        if method == "Swin bias":  # a number per offset and head inside the one window
            self.bias_table = nn.Parameter(torch.randn((2 * trained_grid - 1) ** 2, HEADS) * POSITION_STD)

    def forward(self, x, grid, bias_table=None):
        batch, tokens, _ = x.shape
        q, k, v = self.qkv(x).view(batch, tokens, 3, HEADS, self.head_dim).permute(2, 0, 3, 1, 4)  # (B, H, T, dh)
        scale = 1.0 / math.sqrt(self.head_dim)
        if self.method == "2D RoPE":
            turn = _function(self.functions, "apply_rope_2d")
            q, k = turn(q, grid, grid, prefix_tokens=1), turn(k, grid, grid, prefix_tokens=1)
        scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, T)
        if self.method == "Swin bias":  # the patches' block of the scores, from the window's scores and bias
            patches = _function(self.functions, "window_scores")(q[:, :, 1:], k[:, :, 1:], bias_table, grid, grid,
                                                                   scale=scale)  # (B, H, N, N)
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
    """Patches of PATCH x PATCH pixels and a class token, position by ``method``, LAYERS blocks, two classes.

    ``resize_sincos``: a sin-cos model reads a larger grid with its trained table resized, not built again."""

    def __init__(self, method, functions, trained_grid=TRAINED_GRID):
        super().__init__()
        self.method, self.functions, self.trained_grid = method, functions, trained_grid
        self.embed = nn.Conv2d(3, D_MODEL, PATCH, stride=PATCH)  # a vector per patch
        self.class_token = nn.Parameter(torch.randn(1, 1, D_MODEL) * 0.02)
        if method == "learned":  # the class token's row, then one per patch, row by row
            self.table = nn.Parameter(torch.randn(1 + trained_grid * trained_grid, D_MODEL) * POSITION_STD)
        self.blocks = nn.ModuleList(Block(method, functions, trained_grid) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, 2)
        self.resize_sincos = False
        self._made = {}  # {(grid, resize_sincos): positions}: fixed or resized tables, made once a grid

    def positions(self, grid):
        """What the model uses at ``grid``: the table (1 + grid^2, d) added to the tokens, the bias table of each
        block, or None. At the trained grid the learned ones are the parameters themselves."""
        method, trained, key = self.method, self.trained_grid, (grid, self.resize_sincos)
        if method == "learned" and grid == trained:
            return self.table
        if method == "Swin bias" and grid == trained:
            return [block.attention.bias_table for block in self.blocks]
        if method not in ("sin-cos", "learned", "Swin bias"):
            return None
        if key not in self._made:
            resize = _function(self.functions, "resize_learned_grid")
            with torch.no_grad():  # read after training: nothing to learn
                if method == "sin-cos" and (grid == trained or not self.resize_sincos):
                    made = _function(self.functions, "sincos_2d_table")(grid, grid, D_MODEL, prefix_tokens=1)
                elif method == "sin-cos":
                    made = resize(self.positions(trained), (trained, trained), (grid, grid), prefix_tokens=1)
                elif method == "learned":
                    made = resize(self.table.detach(), (trained, trained), (grid, grid), prefix_tokens=1)
                else:  # Swin: the (2W - 1) x (2W - 1) offsets are an image with a channel per head, no prefix
                    side, new = 2 * trained - 1, 2 * grid - 1
                    made = [resize(block.attention.bias_table.detach(), (side, side), (new, new), prefix_tokens=0)
                            for block in self.blocks]
            self._made[key] = made
        return self._made[key]

    def forward(self, images):
        grid = images.shape[-1] // PATCH
        x = self.embed(images).flatten(2).transpose(1, 2)  # (B, N, d), patches row by row
        x = torch.cat((self.class_token.expand(x.shape[0], 1, D_MODEL), x), dim=1)  # (B, 1 + N, d)
        positions = self.positions(grid)
        if self.method in ("sin-cos", "learned"):
            x = x + positions.to(x)
        tables = positions if self.method == "Swin bias" else [None] * LAYERS
        for block, table in zip(self.blocks, tables):
            x = block(x, grid, table)
        return self.head(self.norm(x[:, 1:].mean(1)))  # (B, 2): from the mean of the patches' outputs


def _said(error):
    text = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def why_unavailable(reading, functions, grid=TRAINED_GRID):
    """Why the model of ``reading`` cannot train with these functions (``grid`` the trained grid) or cannot be read
    at ``grid`` as ``reading`` reads it, or "" when it can: a tiny model is run on one twin pair (and backwards, at
    the trained grid)."""
    method, besides = READINGS[reading]
    needed = NEEDS[method] + (besides if grid != TRAINED_GRID else ())
    missing = [name for name in needed if not callable(_function(functions, name))]
    if missing:
        return f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not defined"
    try:
        torch.manual_seed(0)
        model = TinyViT(method, functions)
        model.resize_sincos = reading == "sin-cos, resized"
        images, _ = twin_images(1, grid, torch.Generator().manual_seed(0))
        if grid == TRAINED_GRID:
            logits = model(images)
            logits.sum().backward()
        else:
            with torch.no_grad():
                logits = model(images)
        if tuple(logits.shape) != (2, 2) or not bool(torch.isfinite(logits).all()):
            return f"the model's output is not two finite numbers an image (got {tuple(logits.shape)})"
    except NotImplementedError as error:
        return f"not written yet ({_said(error)})"
    except Exception as error:  # noqa: BLE001  (the student's code: any error is a reason to leave it out)
        return f"it raised {_said(error)}"
    return ""


# --- training and reading -----------------------------------------------------------------------------------------

def _optimiser(parameters):
    try:  # the fused step: the same arithmetic, fewer operations (these models are all overhead)
        return torch.optim.AdamW(parameters, lr=LEARNING_RATE, weight_decay=0.01, fused=True)
    except (RuntimeError, TypeError):  # an older torch without it on the CPU
        return torch.optim.AdamW(parameters, lr=LEARNING_RATE, weight_decay=0.01)


def train(method, functions, *, seed=0, steps=STEPS, pairs=PAIRS):
    """A TinyViT with ``method`` trained at the trained grid on ``steps`` batches of fresh twin pairs.
    Returns (model, [training loss at each step])."""
    torch.manual_seed(seed)
    model = TinyViT(method, functions)
    optimiser = _optimiser(list(model.parameters()))
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
    """One reading of a trained model on held-out images."""

    name: str  # a key of READINGS
    trained: float  # accuracy at the trained grid
    shuffled: float  # at the trained grid, each image's patches shuffled
    larger: dict = field(default_factory=dict)  # {grid: accuracy} at the larger grids; empty where not read
    not_larger: str = ""  # why it was not read at the larger grids


@dataclass
class Experiment:
    readings: dict  # {name: Reading}, in READINGS' order
    left_out: dict  # {name: why}
    settings: dict
    seconds: float
    losses: dict = field(default_factory=dict)  # {method: [training loss at each step]}
    training_seconds: dict = field(default_factory=dict)  # {method: seconds}

    @property
    def grids(self):
        return [self.settings["trained_grid"], *self.settings["larger_grids"]]

    def table(self):
        """The readings as text: the accuracy at the trained grid, with its patches shuffled, at each larger grid."""
        trained, *larger = self.grids
        columns = [f"{trained}x{trained}", "shuffled"] + [f"{grid}x{grid}" for grid in larger]
        head = f"{'reading':<16} | " + " | ".join(f"{column:>8}" for column in columns) + " | papers"
        lines = [head, "-" * (len(head) + 12)]
        for name, reading in self.readings.items():
            cells = [reading.trained, reading.shuffled] + [reading.larger.get(grid) for grid in larger]
            lines.append(f"{name:<16} | " + " | ".join(f"{100 * cell:>7.1f}%" if cell is not None else f"{'-':>8}"
                                                       for cell in cells) + f" | {PAPERS[name]}")
        for name, reading in self.readings.items():
            if reading.not_larger:
                lines.append(f"{name}: not read at the larger grids: {reading.not_larger}")
        for name, why in self.left_out.items():
            lines.append(f"{name}: left out: {why}")
        lines.append(f"(accuracy on {2 * self.settings['test_pairs']} held-out images a grid, half of each label; "
                     f"{self.settings['steps']} steps of {2 * self.settings['pairs']} images at {trained}x{trained} "
                     f"patches; seed {self.settings['seed']}; {self.seconds:.0f} s in all)")
        return "\n".join(lines)


@one_thread()
def train_small_read_large(functions, *, seed=0, steps=STEPS, test_pairs=TEST_PAIRS, progress=None):
    """Train one TinyViT per method at the trained grid and read it at the trained grid, with its patches shuffled,
    and at the larger grids (see the module's docstring). ``functions``: the notebook's ``globals()``, or a module.
    Returns an ``Experiment``."""
    started = time.perf_counter()
    functions = dict(functions) if isinstance(functions, dict) else vars(functions)
    tests = {grid: twin_images(test_pairs, grid, torch.Generator().manual_seed(seed + 1000 + grid))
             for grid in (TRAINED_GRID, *LARGER_GRIDS)}
    shuffled = shuffled_patches(tests[TRAINED_GRID][0], torch.Generator().manual_seed(seed + 2000))
    readings, left_out, losses, seconds = {}, {}, {}, {}
    for method in METHODS:
        names = [name for name, (model_of, _) in READINGS.items() if model_of == method]
        why = why_unavailable(method, functions)
        if why:
            left_out.update({name: why for name in names})
            continue
        clock = time.perf_counter()
        model, losses[method] = train(method, functions, seed=seed, steps=steps)
        seconds[method] = time.perf_counter() - clock
        trained = accuracy(model, *tests[TRAINED_GRID])
        scrambled = accuracy(model, shuffled, tests[TRAINED_GRID][1])
        for name in names:
            reading = readings[name] = Reading(name, trained, scrambled)
            reading.not_larger = why_unavailable(name, functions, LARGER_GRIDS[0])
            if reading.not_larger:
                continue
            model.resize_sincos = name == "sin-cos, resized"
            try:
                reading.larger = {grid: accuracy(model, *tests[grid]) for grid in LARGER_GRIDS}
            except Exception as error:  # noqa: BLE001  (the student's code)
                reading.not_larger, reading.larger = f"it raised {_said(error)}", {}
        if progress:
            progress(method, seconds[method])
    return Experiment({name: readings[name] for name in READINGS if name in readings},
                      {name: left_out[name] for name in READINGS if name in left_out},
                      {"seed": seed, "steps": steps, "pairs": PAIRS, "test_pairs": test_pairs,
                       "trained_grid": TRAINED_GRID, "larger_grids": LARGER_GRIDS},
                      time.perf_counter() - started, losses, seconds)


# --- what the run shows -------------------------------------------------------------------------------------------

def chance_band(images):
    """Half the width of the band in which a coin's accuracy over ``images`` images falls 95 times in 100."""
    return 1.96 * math.sqrt(0.25 / images)


def _percent(value):
    return f"{100 * value:.1f}%"


def conclusions(experiment):
    """Sentences built from the run's numbers, never from what a run is expected to show."""
    readings = experiment.readings
    if not readings:
        return ["No model was trained in this run, so there is nothing to compare."]
    trained, *larger = experiment.grids
    size = lambda grid: f"{grid}x{grid}"  # noqa: E731
    largest = larger[-1]
    count = 2 * experiment.settings["test_pairs"]
    band = chance_band(count)
    at_chance = lambda value: abs(value - 0.5) <= band  # noqa: E731
    said = [f"A coin would score 50% give or take {100 * band:.1f} points over these {count} images (95 times in "
            f"100): within that band is chance."]
    if "none" in readings:
        none = readings["none"]
        said.append(f"Without positions: {_percent(none.trained)} at {size(trained)}" + "".join(
            f", {_percent(value)} at {size(grid)}" for grid, value in none.larger.items())
            + ". Each image's twin holds the same patches, so the model answers both alike and is right on exactly "
              "one of the two, whatever it learnt.")
    placed = {name: reading for name, reading in readings.items() if name != "none"}
    models = {name: reading for name, reading in placed.items() if name != "sin-cos, resized"}  # one per model
    if models:
        ranked = sorted(models, key=lambda name: -models[name].trained)
        said.append(f"At {size(trained)}, the grid trained on: " + ", ".join(
            f"{name} {_percent(models[name].trained)}" for name in ranked) + ".")
        fell = [name for name in ranked if at_chance(models[name].shuffled)]
        kept = [name for name in ranked if name not in fell]
        said.append(f"With each image's patches shuffled, {len(fell)} of {len(ranked)} models with positions fall to "
                    "chance" + (f" ({', '.join(fell)})" if fell else "")
                    + ("; above it still: " + ", ".join(f"{name} {_percent(models[name].shuffled)}" for name in kept)
                       if kept else "") + ".")
    read = {name: reading for name, reading in placed.items() if reading.larger}
    if read:
        ranked = sorted(read, key=lambda name: -read[name].larger[largest])
        said.append(f"At {size(largest)}, a grid never seen in training: " + ", ".join(
            f"{name} {_percent(read[name].larger[largest])}" for name in ranked) + f". Best: {ranked[0]}.")
        lost = [name for name in ranked if at_chance(read[name].larger[largest]) and not at_chance(read[name].trained)]
        if lost:
            said.append(f"Right at {size(trained)} but at chance at {size(largest)}: {', '.join(lost)}.")
        steady = [name for name in ranked if all(read[name].larger[grid] >= read[name].trained - band
                                                  for grid in larger)]
        if steady:
            said.append(f"Within {100 * band:.1f} points of its own accuracy at {size(trained)} on every larger grid: "
                        f"{', '.join(steady)}.")
        if {"sin-cos", "sin-cos, resized"} <= set(read):
            rebuilt, resized = read["sin-cos"].larger[largest], read["sin-cos, resized"].larger[largest]
            said.append(f"The same sin-cos model reads {size(largest)} at {_percent(resized)} with its trained table "
                        f"resized and at {_percent(rebuilt)} with its table built again there: "
                        + ("resizing reads it better." if resized > rebuilt else
                           "building it again reads it better." if rebuilt > resized else "the same."))
        if {"learned", "sin-cos"} <= set(read):
            learned, rebuilt = read["learned"].larger[largest], read["sin-cos"].larger[largest]
            said.append(f"The learned table, resized: {_percent(learned)} at {size(largest)}, "
                        + ("above" if learned > rebuilt else "below" if learned < rebuilt else "level with")
                        + f" the sin-cos table built again ({_percent(rebuilt)}).")
    unread = [name for name, reading in placed.items() if reading.not_larger]
    if unread:
        said.append("Not read at the larger grids: " + "; ".join(f"{name} ({placed[name].not_larger})"
                                                                  for name in unread) + ".")
    return said


def figure_of(experiment):
    """Accuracy of each reading at the trained grid, with its patches shuffled, and at each larger grid (the
    lesson's figure and the docs')."""
    import matplotlib.pyplot as plt

    trained, *larger = experiment.grids
    names = list(experiment.readings)
    bars = [(f"{trained}x{trained}, trained", lambda reading: reading.trained, "C0"),
            (f"{trained}x{trained}, shuffled", lambda reading: reading.shuffled, "0.55")]
    bars += [(f"{grid}x{grid}, never seen", lambda reading, grid=grid: reading.larger.get(grid), f"C{number + 1}")
             for number, grid in enumerate(larger)]
    figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.8))
    width = 0.8 / len(bars)
    for number, (label, value_of, colour) in enumerate(bars):
        values = [value_of(experiment.readings[name]) for name in names]
        places = [at for at, value in enumerate(values) if value is not None]
        axis.bar([at + (number - (len(bars) - 1) / 2) * width for at in places],
                 [100 * values[at] for at in places], width, label=label, color=colour)
    band = 100 * chance_band(2 * experiment.settings["test_pairs"])
    axis.axhspan(50 - band, 50 + band, color="0.88", zorder=0, label="chance")
    axis.set_xticks(range(len(names)), [name.replace(", ", ",\n") for name in names])
    axis.set(ylim=(0, 105), ylabel="held-out accuracy (%)",
             title=f"trained at {trained}x{trained} patches: red left of blue, or above it?")
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
