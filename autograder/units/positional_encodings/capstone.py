"""The lesson's last part: position in a model that learns, built on your own functions.

Two experiments, each run once per way of giving a transformer position:

* ``none``: no position at all;
* ``learned``: your ``LearnedPositionalEmbedding``, added to the word vectors;
* ``sinusoidal``: your ``sinusoidal_table``, added to the word vectors;
* ``shaw``: your ``shaw_scores`` (with your ``clipped_relative_positions``), a learned vector per clipped
  distance at the key;
* ``t5``: your ``t5_bias`` (with your ``t5_relative_position_bucket``) added by your ``biased_scores``, a
  learned number per bucket and head.

1. **A tiny language model** (decoder-only, causal) trained on short stories from a small grammar of this
   file's own, once per method: its loss on held-out stories, a loss per position on stories longer than
   it was trained on, and a few lines it writes.
2. **A bag of words or not**: a small bidirectional classifier reads "all X are Y" and says whether it is
   true in a small taxonomy of this file's own. "all dogs are animals" and "all animals are dogs" hold the
   same words; without position (and without a causal mask) attention cannot tell them apart.

And one measurement: after adding a position vector to a word vector, is the nearest word vector still
the same word?

This file holds no answer of the assignment: the models call the functions you pass in (``functions``: your
module, or the notebook's ``globals()``). A method whose functions are not written yet, or raise, is left
out, and the report says which and why. Everything is drawn from ``seed``: the same seed, the same figures.

Run it on its own: ``python -m autograder capstone`` (with the reference) prints the comparison.
"""

import contextlib
import functools
import math
import random
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

METHODS = ("none", "learned", "sinusoidal", "shaw", "t5")
# The second unit's methods (rotary_alibi): the same model, for its train-short, test-long experiment.
LONGER_METHODS = ("rope", "alibi")
NEEDS = {"none": (), "learned": ("LearnedPositionalEmbedding",), "sinusoidal": ("sinusoidal_table",),
         "shaw": ("shaw_scores", "clipped_relative_positions"),
         "t5": ("t5_bias", "t5_relative_position_bucket", "biased_scores"),
         "rope": ("rope_scores", "apply_rotary", "rotary_angles"), "alibi": ("alibi_bias", "alibi_slopes")}
MAX_RELATIVE = 8  # Shaw's clipping distance k in these models
NUM_BUCKETS, MAX_DISTANCE = 16, 64  # the T5 bias's settings in these models
GPT2_SAME_WORD = 0.99999  # the lecture's figure on GPT-2's own weights (see nearest_word_kept)

# --- the stories: a grammar of the kit's own, whose word order carries the meaning ---------------------------

NAMES = ("mia", "tom", "ana", "leo", "sam", "eva", "ben", "zoe")
ANIMALS = ("cat", "dog", "fox", "owl", "frog", "duck", "goat", "bear")
PLACES = ("park", "river", "forest", "garden", "hill", "lake")
COLOURS = ("red", "blue", "green", "small", "big", "old")
FEELINGS = ("happy", "sad", "tired", "proud", "scared")
THINGS = ("ball", "hat", "apple", "box", "kite", "book")


def story(rng):
    """One short story: who had what, where they went, what happened, how it ended. Who did what to whom
    is told by the order of the words alone."""
    name, friend = rng.sample(NAMES, 2)
    animal, other = rng.sample(ANIMALS, 2)
    place, thing, colour, feeling = rng.choice(PLACES), rng.choice(THINGS), rng.choice(COLOURS), rng.choice(FEELINGS)
    lines = [f"{name} had a {colour} {animal} ."]
    middle = [
        f"one day {name} and the {animal} went to the {place} .",
        f"at the {place} the {animal} saw a {other} .",
        f"the {other} took the {thing} from {friend} .",
        f"{friend} gave the {thing} to the {animal} .",
        f"the {animal} ran after the {other} .",
    ]
    lines += rng.sample(middle, rng.randint(2, 4))
    lines.append(f"then {name} was {feeling} .")
    return " ".join(lines).split() + ["<end>"]


def stories(count, seed):
    rng = random.Random(seed)
    return [story(rng) for _ in range(count)]


class Vocabulary:
    """Words to numbers and back; every word the grammar can write, in a fixed order."""

    def __init__(self):
        words = ["<end>", "."] + sorted({word for group in (NAMES, ANIMALS, PLACES, COLOURS, FEELINGS, THINGS)
                                         for word in group})
        for template in ("had a one day and the went to at saw took from gave ran after then was "
                         "all are").split():
            if template not in words:
                words.append(template)
        words += [word for word in TAXONOMY_WORDS if word not in words]
        self.words = words
        self.index = {word: number for number, word in enumerate(words)}

    def __len__(self):
        return len(self.words)

    def encode(self, words):
        return torch.tensor([self.index[word] for word in words], dtype=torch.long)

    def decode(self, numbers):
        return " ".join(self.words[int(number)] for number in numbers)


# --- the models --------------------------------------------------------------------------------------------

def _function(functions, name):
    if isinstance(functions, dict):
        return functions.get(name)
    return getattr(functions, name, None)


class Attention(nn.Module):
    """Multi-head self-attention whose scores take position the way ``method`` says."""

    def __init__(self, d_model, heads, method, functions, causal, shared_bias=None):
        super().__init__()
        self.heads, self.head_dim, self.method, self.functions, self.causal = heads, d_model // heads, method, \
            functions, causal
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        if method == "shaw":  # one learned vector per clipped distance, -k .. k
            self.rel_k = nn.Parameter(torch.randn(2 * MAX_RELATIVE + 1, self.head_dim) * 0.02)
        self.shared_bias = shared_bias  # T5: one table of (bucket, head) numbers for every layer
        self.position_factor = 1.0  # RoPE: positions divided by this (position interpolation), 1 when trained

    def forward(self, x):
        batch, length, d_model = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.method in ("shaw", "t5", "rope", "alibi"):
            if self.method == "shaw":
                scores = _function(self.functions, "shaw_scores")(q, k, self.rel_k, MAX_RELATIVE)
            elif self.method == "rope":
                positions = torch.arange(length, device=x.device)
                if self.position_factor != 1.0:
                    positions = _function(self.functions, "scaled_positions")(positions, factor=self.position_factor)
                scores = _function(self.functions, "rope_scores")(q, k, positions_q=positions, positions_k=positions)
            elif self.method == "alibi":
                slopes = _function(self.functions, "alibi_slopes")(self.heads).to(q)
                bias = _function(self.functions, "alibi_bias")(length, length, slopes, causal=self.causal)
                scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim) + bias
            else:
                bias = _function(self.functions, "t5_bias")(length, length, self.shared_bias,
                                                            bidirectional=not self.causal, num_buckets=NUM_BUCKETS,
                                                            max_distance=MAX_DISTANCE)
                scores = _function(self.functions, "biased_scores")(q, k, bias)
            if self.causal:
                future = torch.ones(length, length, dtype=torch.bool, device=x.device).triu(1)
                scores = scores.masked_fill(future, float("-inf"))
            mixed = scores.softmax(-1) @ v
        else:  # no position in the scores: PyTorch's own attention
            mixed = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.out(mixed.transpose(1, 2).reshape(batch, length, d_model))


class Block(nn.Module):
    def __init__(self, d_model, heads, method, functions, causal, shared_bias):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = Attention(d_model, heads, method, functions, causal, shared_bias)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """Word vectors, position by ``method``, a few blocks; ``causal`` for the language model, not for the
    classifier. ``outputs`` is the vocabulary (a language model) or the number of classes."""

    def __init__(self, vocabulary_size, outputs, method, functions, *, d_model=64, heads=4, layers=2, context=32,
                 causal=True):
        super().__init__()
        self.method, self.functions, self.context, self.causal, self.d_model = method, functions, context, causal, \
            d_model
        self.embedding = nn.Embedding(vocabulary_size, d_model)
        nn.init.normal_(self.embedding.weight, std=1.0)
        self.positions = None
        if method == "learned":
            self.positions = _function(functions, "LearnedPositionalEmbedding")(context, d_model, "add")
        shared = nn.Parameter(torch.zeros(NUM_BUCKETS, heads)) if method == "t5" else None
        self.t5_table = shared
        self.blocks = nn.ModuleList(Block(d_model, heads, method, functions, causal, shared) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, outputs)

    def position_vectors(self, length):
        """The vectors added to the word vectors at positions 0..length-1, or None for the other methods."""
        if self.method == "learned":
            return self.positions.weight[:length]
        if self.method == "sinusoidal":
            return _function(self.functions, "sinusoidal_table")(length, self.d_model).to(self.embedding.weight)
        return None

    def features(self, tokens):
        x = self.embedding(tokens)  # (B, L, d)
        if self.method == "learned":
            x = self.positions(x)  # your module: raises ValueError past max_len
        elif self.method == "sinusoidal":
            x = x + self.position_vectors(tokens.shape[1])
        for block in self.blocks:
            x = block(x)
        return self.norm(x)

    def forward(self, tokens):
        return self.head(self.features(tokens))  # (B, L, outputs)


def why_unavailable(method, functions):
    """Why ``method`` cannot run with these functions (not written, or raising), or "" when it can."""
    for name in NEEDS[method]:
        if not callable(_function(functions, name)):
            return f"{name} is not defined"
    try:
        torch.manual_seed(0)
        model = TinyTransformer(10, 10, method, functions, d_model=8, heads=2, layers=1, context=6)
        model(torch.zeros(2, 5, dtype=torch.long)).sum().backward()
    except NotImplementedError:
        return f"{' or '.join(NEEDS[method])} is not written yet"
    except Exception as error:  # noqa: BLE001  (the student's code: any error is a reason to leave it out)
        return f"it raised {type(error).__name__}: {str(error)[:200]}"
    return ""


# --- training ------------------------------------------------------------------------------------------------

@dataclass
class LanguageModelRun:
    method: str
    train_losses: list = field(default_factory=list)  # (step, loss)
    held_out_losses: list = field(default_factory=list)  # (step, loss)
    final_held_out: float = float("nan")
    per_position: list = None  # loss at each position of stories longer than the training context
    longer: str = ""  # what happened on the longer stories
    samples: list = field(default_factory=list)
    same_word: float = None  # fraction of (word, position) pairs whose nearest word vector is the same word
    seconds: float = 0.0
    model: object = None


def _stream(corpus, vocabulary):
    return torch.cat([vocabulary.encode(words) for words in corpus])


@functools.lru_cache(maxsize=4)
def _streams(count, seed):
    """The training and held-out stories as word numbers: drawn once per (count, seed), for every method."""
    vocabulary = Vocabulary()
    return _stream(stories(count, seed), vocabulary), _stream(stories(max(count // 6, 50), seed + 1), vocabulary)


def _windows(stream, length, count, generator):
    starts = torch.randint(0, stream.numel() - length - 1, (count,), generator=generator)
    rows = torch.stack([stream[start:start + length + 1] for start in starts.tolist()])
    return rows[:, :-1], rows[:, 1:]


def _loss(model, inputs, targets):
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train_language_model(method, functions, *, seed=0, steps=200, context=32, batch=32, d_model=64, layers=2,
                         stories_count=3000, evaluate_every=50):
    """Train the tiny language model with ``method`` on the stories; its losses, samples and measurements."""
    torch.manual_seed(seed)
    vocabulary = Vocabulary()
    train, held = _streams(stories_count, seed)
    model = TinyTransformer(len(vocabulary), len(vocabulary), method, functions, d_model=d_model, layers=layers,
                            context=context)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    held_inputs, held_targets = _windows(held, context, 64, torch.Generator().manual_seed(seed + 2))
    run = LanguageModelRun(method)
    started = time.perf_counter()
    for step in range(1, steps + 1):
        inputs, targets = _windows(train, context, batch, generator)
        loss = _loss(model, inputs, targets)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        run.train_losses.append((step, loss.item()))
        if step % evaluate_every == 0 or step == steps:
            with torch.no_grad():
                run.held_out_losses.append((step, _loss(model, held_inputs, held_targets).item()))
    run.final_held_out = run.held_out_losses[-1][1]
    run.seconds = time.perf_counter() - started
    model.eval()
    run.per_position, run.longer = loss_per_position(model, held, 2 * context, seed)
    # Each method its own draws: with the same ones, models that learnt much the same write the same words.
    run.samples = [sample(model, vocabulary, prompt, 24, seed + (METHODS + LONGER_METHODS).index(method))
                   for prompt in ("mia had a", "at the")]
    vectors = model.position_vectors(context)
    if vectors is not None:
        run.same_word = nearest_word_kept(model.embedding.weight.detach(), vectors.detach())
    run.model = model
    return run


def loss_per_position(model, stream, length, seed):
    """The held-out loss at each position 0..length-1 of windows ``length`` long (longer than the training
    context when ``length`` is), or (None, why) where the model refuses them."""
    inputs, targets = _windows(stream, length, 64, torch.Generator().manual_seed(seed + 3))
    try:
        with torch.no_grad():
            logits = model(inputs)
    except ValueError as error:  # the learned table has no row past max_len: your own ValueError
        return None, f"refused: {error}"
    losses = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    return losses.view(inputs.shape).mean(0).tolist(), ""


@torch.no_grad()
def sample(model, vocabulary, prompt, words, seed, temperature=1.0):
    """``prompt`` and the next ``words`` words the model writes (sampled, from ``seed``)."""
    generator = torch.Generator().manual_seed(seed)
    tokens = vocabulary.encode(prompt.split())[None]
    for _ in range(words):
        logits = model(tokens[:, -model.context:])[0, -1] / temperature
        token = torch.multinomial(logits.softmax(-1), 1, generator=generator)
        tokens = torch.cat((tokens, token[None]), dim=1)
        if vocabulary.words[int(token)] == "<end>":
            break
    return vocabulary.decode(tokens[0])


def nearest_word_kept(word_vectors, position_vectors):
    """The fraction of (word, position) pairs for which the word vector nearest to word + position (by cosine
    similarity) is that word's own. ``word_vectors`` (V, d), ``position_vectors`` (T, d)."""
    words = F.normalize(word_vectors, dim=-1)  # (V, d)
    summed = F.normalize(word_vectors[:, None, :] + position_vectors[None, :, :], dim=-1)  # (V, T, d)
    nearest = (summed @ words.T).argmax(-1)  # (V, T)
    return (nearest == torch.arange(word_vectors.shape[0])[:, None]).double().mean().item()


# --- the classifier: "all X are Y" ------------------------------------------------------------------------

# A taxonomy of the kit's own: each kind, and what it is a kind of.
TAXONOMY = {
    "poodles": "dogs", "beagles": "dogs", "terriers": "dogs", "tabbies": "cats", "siameses": "cats",
    "sparrows": "birds", "robins": "birds", "eagles": "birds", "salmons": "fish", "trouts": "fish",
    "oaks": "trees", "pines": "trees", "birches": "trees", "roses": "flowers", "tulips": "flowers",
    "dogs": "animals", "cats": "animals", "birds": "animals", "fish": "animals",
    "trees": "plants", "flowers": "plants",
}
TAXONOMY_WORDS = sorted(set(TAXONOMY) | set(TAXONOMY.values()))


def kinds_of(word):
    found, seen = [], TAXONOMY.get(word)
    while seen:
        found.append(seen)
        seen = TAXONOMY.get(seen)
    return found


def true_pairs():
    """(X, Y) for every "all X are Y" that the taxonomy makes true."""
    return sorted((word, kind) for word in TAXONOMY for kind in kinds_of(word))


@dataclass
class ClassifierRun:
    method: str
    train_accuracy: float
    held_out_accuracy: float  # on pairs it never saw, in both orders
    seconds: float


def train_order_classifier(method, functions, *, seed=0, steps=300, d_model=32, held_out=6):
    """Train the bidirectional classifier on "all X are Y" in both orders (true, and swapped: false).

    ``held_out`` true pairs (and their swaps) are kept out of training: the accuracy on them says whether the
    model learnt where each word stands in the taxonomy and reads the order; without position it cannot
    tell a sentence from its swap, so it scores exactly one of each pair right, or both wrong: at most 50%.
    """
    torch.manual_seed(seed)
    vocabulary = Vocabulary()
    pairs = true_pairs()
    random.Random(seed).shuffle(pairs)
    test, train = pairs[:held_out], pairs[held_out:]

    def sentences(chosen):
        inputs = [vocabulary.encode(["all", x, "are", y]) for x, y in chosen] + \
                 [vocabulary.encode(["all", y, "are", x]) for x, y in chosen]
        return torch.stack(inputs), torch.tensor([1] * len(chosen) + [0] * len(chosen))

    train_x, train_y = sentences(train)
    test_x, test_y = sentences(test)
    model = TinyTransformer(len(vocabulary), 2, method, functions, d_model=d_model, heads=2, layers=2, context=4,
                            causal=False)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    started = time.perf_counter()
    for _ in range(steps):
        logits = model.head(model.features(train_x).mean(1))  # the sentence: the mean of its positions
        loss = F.cross_entropy(logits, train_y)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        accuracy = lambda x, y: (model.head(model.features(x).mean(1)).argmax(-1) == y).double().mean().item()
        return ClassifierRun(method, accuracy(train_x, train_y), accuracy(test_x, test_y),
                             time.perf_counter() - started)


# --- the comparison --------------------------------------------------------------------------------------------

@dataclass
class Comparison:
    language_models: dict  # method: LanguageModelRun
    classifiers: dict  # method: ClassifierRun
    left_out: dict  # method: why it did not run
    seconds: float
    settings: dict

    def table(self):
        """The comparison as text: one row per method."""
        lines = [f"{'method':<11} | {'held-out loss':>13} | {'loss at 2x context':>18} | {'same word':>9} | "
                 f"{'order: trained':>14} | {'order: held out':>15}"]
        lines.append("-" * len(lines[0]))
        for method in METHODS:
            if method in self.left_out:
                lines.append(f"{method:<11} | left out: {self.left_out[method]}")
                continue
            if method not in self.language_models:
                lines.append(f"{method:<11} | not trained in this run")
                continue
            lm, classifier = self.language_models[method], self.classifiers[method]
            longer = (f"{sum(lm.per_position[self.settings['context']:]) / self.settings['context']:.3f}"
                      if lm.per_position else "refused")
            same = f"{lm.same_word:.1%}" if lm.same_word is not None else "-"
            lines.append(f"{method:<11} | {lm.final_held_out:>13.3f} | {longer:>18} | {same:>9} | "
                         f"{classifier.train_accuracy:>14.0%} | {classifier.held_out_accuracy:>15.0%}")
        lines.append(f"({self.settings['steps']} steps of batch {self.settings['batch']}, context "
                     f"{self.settings['context']}; classifier {self.settings['classifier_steps']} steps; seed "
                     f"{self.settings['seed']}; {self.seconds:.0f} s in all)")
        return "\n".join(lines)


@contextlib.contextmanager
def one_thread():
    """torch on one thread for the block. These models are tiny (width 64, batches of 32 windows of 32 words): each
    operation is too small to share out, and torch's pool waits for every thread at each one, so a single busy
    process beside the kernel (a second kernel, nbgrader grading the next notebook) stalls it. On a 2-core machine
    (benchmarks/lesson_time.py --threads, 2026-12-03) a shortened comparison took 7.5 s on two threads and 7.3 s on
    one when quiet, 28.0 s and 6.6 s beside one busy process."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@one_thread()
def compare(functions, *, seed=0, steps=200, context=32, batch=32, classifier_steps=300, methods=METHODS,
            progress=None, stories_count=3000):
    """Every method that can run with ``functions``: the language model and the classifier of each (on one thread:
    see ``one_thread``)."""
    started = time.perf_counter()
    language_models, classifiers, left_out = {}, {}, {}
    for method in methods:
        why = why_unavailable(method, functions)
        if why:
            left_out[method] = why
            continue
        language_models[method] = train_language_model(method, functions, seed=seed, steps=steps, context=context,
                                                        batch=batch, stories_count=stories_count)
        classifiers[method] = train_order_classifier(method, functions, seed=seed, steps=classifier_steps)
        if progress:
            progress(method, language_models[method], classifiers[method])
    return Comparison(language_models, classifiers, left_out, time.perf_counter() - started,
                      {"seed": seed, "steps": steps, "context": context, "batch": batch,
                       "classifier_steps": classifier_steps})


@dataclass
class LongerRun:
    """One model of the train-short, test-long experiment, and its loss at each position of longer windows."""

    method: str  # "rope", "rope + interpolation", "alibi"
    per_position: list  # held-out loss at positions 0 .. length-1
    trained_loss: float  # mean loss over the trained positions
    beyond_loss: float  # mean loss past them
    seconds: float


def _tune_longer(model, stream, length, factor, steps, seed):
    """Position interpolation as its paper does it: positions divided by ``factor``, then a few steps of training
    on windows ``length`` long (the model is changed in place)."""
    for block in model.blocks:
        block.attention.position_factor = factor
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed + 5)
    for _ in range(steps):
        inputs, targets = _windows(stream, length, 8, generator)
        loss = _loss(model, inputs, targets)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    model.eval()


@one_thread()
def train_short_test_long(functions, *, seed=0, steps=200, context=32, longer=4, stories_count=3000,
                          tune_steps=30):
    """Train RoPE and ALiBi models at ``context`` and read windows ``longer`` times as long: RoPE as trained,
    RoPE with position interpolation (positions divided by ``longer`` with ``scaled_positions``, then
    ``tune_steps`` steps of training at the longer length, as Chen et al. do), and ALiBi as trained.
    A method whose functions are not written (or raise) is left out, with the reason: {method: why}."""

    results, left_out = {}, {}
    _, held = _streams(stories_count, seed)
    for method in LONGER_METHODS:
        why = why_unavailable(method, functions)
        if why:
            left_out[method] = why
            continue
        started = time.perf_counter()
        run = train_language_model(method, functions, seed=seed, steps=steps, context=context,
                                   stories_count=stories_count)
        readings = [(method, 1.0)]
        if method == "rope":
            why = "" if callable(_function(functions, "scaled_positions")) else "scaled_positions is not defined"
            if why:
                left_out["rope + interpolation"] = why
            else:
                readings.append(("rope + interpolation", float(longer)))
        train, _ = _streams(stories_count, seed)
        for name, factor in readings:
            model = run.model
            try:
                if factor != 1.0:  # read last: tuning changes the model, whose plain reading is taken already
                    _tune_longer(model, train, longer * context, factor, tune_steps, seed)
                losses, said = loss_per_position(model, held, longer * context, seed)
            except Exception as error:  # noqa: BLE001  (the student's function: any error leaves it out)
                left_out[name] = f"it raised {type(error).__name__}: {str(error)[:200]}"
                continue
            if losses is None:
                left_out[name] = said
                continue
            results[name] = LongerRun(name, losses, sum(losses[:context]) / context,
                                      sum(losses[context:]) / (len(losses) - context), time.perf_counter() - started)
    return results, left_out


def main(argv=None, references=None):
    """The kit's ``python -m autograder capstone``: the experiments on ``references`` ({unit name: its reference
    module}, which the kit's command passes), printed as tables. In a student's folder, run the notebook instead."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m autograder capstone", description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200, help="training steps of each language model")
    parser.add_argument("--classifier-steps", type=int, default=300, help="training steps of each classifier")
    parser.add_argument("--longer", action="store_true",
                        help="the second unit's experiment instead: RoPE, RoPE with interpolation and ALiBi trained "
                             "at 32 words and read at 128")
    args = parser.parse_args(argv)
    if not references:
        parser.exit(2, "the capstone's experiments run from the notebook; this command is the kit's "
                       "(python -m autograder capstone)\n")
    if args.longer:
        longer, left_out = train_short_test_long(references["rotary_alibi"], seed=args.seed, steps=args.steps)
        print(f"{'method':<21} | {'loss, trained positions':>23} | {'loss beyond them':>16}")
        for name, run in longer.items():
            print(f"{name:<21} | {run.trained_loss:>23.3f} | {run.beyond_loss:>16.3f}")
        for name, why in left_out.items():
            print(f"{name:<21} | left out: {why}")
        return 0
    reference = references["positional_encodings"]
    comparison = compare(reference, seed=args.seed, steps=args.steps, classifier_steps=args.classifier_steps,
                         progress=lambda method, lm, c: print(f"  {method}: {lm.seconds + c.seconds:.1f} s",
                                                              flush=True))
    print(comparison.table())
    for method, run in comparison.language_models.items():
        print(f"{method:<11} writes: {run.samples[0]}")
    return 0
