# The lesson of the third unit, as text. `python -m autograder build` turns it into the nbgrader source notebook
# assignments/source/long_context/long_context.ipynb; edit this file, not that one.
# The cell kinds are those of the units before it ([markdown], plain code, [demo: NAME], [solution: FUNCTION],
# [tests: TEST_ID]), and [given: UNIT]: left empty, the build writes there the code this unit borrows from UNIT (the
# rubric's BORROWS), finished. The answers live only in solutions/long_context.py; nothing below may contain one.
# A demo computes everything from the student's functions before it makes its figure, so that a function still
# raising NotImplementedError stops the cell with no empty figure left behind; a line of another task's function
# is drawn only where that function is written (`written`).

# %% [markdown]
# # Reading past the training length: NTK-aware scaling, YaRN and Llama 3
#
# A RoPE model is trained on texts of some length $L$: 2048 tokens for LLaMA, 4096 for LLaMA 2, 8192 for Llama 3.
# Asked to read a text eight times as long, it meets positions it never saw, and its loss climbs. The second unit
# ended with the first cure, position interpolation (Chen et al. 2023). This unit builds the ones that open models
# use today, each a new set of RoPE frequencies, and ends with an experiment that lines up every method of the
# course on one question: what happens to a small model's loss when it reads past the length it was trained on?
#
# | part | what | used in | your task (the `pytest -k` word) | points |
# |---|---|---|---|---|
# | 2 | NTK-aware base scaling | exllama's `alpha`, llama.cpp's `rope-freq-base` | `ntk_inverse_frequencies` | {points:ntk_inverse_frequencies} |
# | 3 | dynamic NTK scaling | Hugging Face's `dynamic` | `dynamic_ntk_inverse_frequencies` | {points:dynamic_ntk_inverse_frequencies} |
# | 4 | YaRN's ramp | Qwen 2.5, DeepSeek V3 | `yarn_inverse_frequencies` | {points:yarn_inverse_frequencies} |
# | 5 | YaRN's attention temperature | the same | `yarn_attention_scale` | {points:yarn_attention_scale} |
# | 6 | Llama 3's wavelength rule | Llama 3.1 to 3.3 | `llama3_inverse_frequencies` | {points:llama3_inverse_frequencies} |
# | 7 | scores at scaled frequencies | every one of them | `scaled_rope_scores` | {points:scaled_rope_scores} |
# | 8 | the speed of the score path | | (timed by the grader) | {points:timing} |
# | 9 | train short, read long: every method of the course | | (not graded) | |
#
# **How to work**, as in the units before: each function to write says `# YOUR CODE HERE`; its docstring gives the
# formula, the shapes, the convention the grader expects, a worked example and the paper; the locked cells after it
# check your work, and the grader runs more cases than you see. `pytest -k ntk` (or any word of the table) runs the
# self-checks in a terminal. A cell that uses a task not written yet raises `NotImplementedError`: use *Run > Run
# Selected Cell and All Below* from the next part to go on.
#
# **Rules of the game.** No Python loop over positions or pairs. Pair $i$ counts from 0 to $d_h/2 - 1$ and turns at
# $\theta_i = \text{base}^{-2i/d_h}$ before any scaling; its wavelength is $\lambda_i = 2\pi/\theta_i$ positions.
# $L$ is the trained length, $s$ the factor by which the text read is longer ($s = 8$: eight times as long).

# %%
import math

import torch

# %% [demo: setup]
# Plotting and the checks used by the test cells. This cell is read-only.
import matplotlib.pyplot as plt

torch.manual_seed(0)  # the same pictures on every run (not the cell's last line, which would print it)
from checks import assert_close, assert_no_loops, assert_raises


def written(function, *args, **kwargs):
    """function(*args, **kwargs), or None while it still raises NotImplementedError: a picture leaves out the line
    of a task not written yet, and draws the rest."""
    try:
        return function(*args, **kwargs)
    except NotImplementedError:
        return None


def rope_frequencies(head_dim, base=10000.0):
    """RoPE's own theta_i = base ** (-2i / dh), one per pair: the second unit's frequencies, for comparison."""
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)

# %% [markdown]
# ## The second unit's rotation, given
#
# `apply_rotary` is the second unit's reference, given here finished (you wrote your own there), with the
# `rotary_angles` it calls. Run the cell below and leave it as it is: `scaled_rope_scores` in part 7 turns queries
# and keys with it, and the grader runs this code after yours in any case, so it is not graded again here.

# %% [given: rotary_alibi]

# %% [markdown]
# ## 1. What goes wrong past the training length
#
# Pair $i$ of a query turns by the angle $t\,\theta_i$ at position $t$. Within the $L$ positions of training it
# turns
#
# $$ r_i = \frac{L\,\theta_i}{2\pi} = \frac{L}{\lambda_i} \quad \text{times.} $$
#
# That number splits the pairs in two:
#
# * **fast pairs** (high frequency, $\lambda_i < L$, $r_i > 1$) have turned full circles in training: every angle
#   they can take at position $8L$ they took before. Read further, they show the model nothing new.
# * **slow pairs** (low frequency, $\lambda_i > L$, $r_i < 1$) have only ever covered an arc of their circle,
#   $[0, L\theta_i)$. At position $8L$ they stand at angles the model never saw, and the scores that lean on them,
#   which carry the coarse sense of distance, are out of their training range. That is where the loss climbs.
#
# **Position interpolation** (Chen et al. 2023, arXiv:2306.15595; the second unit's `scaled_positions`) divides
# every position by $s$, which is the same as dividing every frequency: $\theta'_i = \theta_i / s$. Every angle is
# back in range, but the fast pairs pay for a problem they did not have: two neighbouring words are now $1/s$ of a
# position apart, their angles $\theta_i / s$ apart, closer than any two words the model ever saw, and the fine order of
# nearby words, which those pairs carry, is squeezed. Chen et al. recover it by training a little at the new length.
# The methods of this unit scale **each pair by its own amount**: little or nothing for the fast pairs, the full
# $1/s$ for the slow ones.
#
# The picture: the wavelengths of LLaMA 2's 64 pairs ($d_h = 128$, base 10000, $L = 4096$), against $L$ and $8L$.

# %% [demo: wavelengths_picture]
head_dim, trained, factor = 128, 4096, 8
wavelengths = 2 * math.pi / rope_frequencies(head_dim)  # (dh/2,)
pairs = torch.arange(head_dim // 2)
fast = wavelengths < trained
print(f"{int(fast.sum())} of {head_dim // 2} pairs turn at least once within L = {trained}: every angle seen.")
print(f"{int((~fast).sum())} turn less than once; {int((wavelengths > factor * trained).sum())} of them turn less "
      f"than once even within {factor}L = {factor * trained}.")
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.6))
axis.semilogy(pairs[fast], wavelengths[fast], "o", markersize=3, label="fast pairs: every angle seen")
axis.semilogy(pairs[~fast], wavelengths[~fast], "o", markersize=3, label="slow pairs: an arc only")
axis.axhline(trained, color="black", linestyle="--", label=f"L = {trained}")
axis.axhline(factor * trained, color="0.5", linestyle=":", label=f"{factor}L = {factor * trained}")
axis.set(xlabel="pair i (fast to slow)", ylabel="wavelength 2 pi / theta_i (positions)",
         title="LLaMA 2's pairs: which have turned a full circle within L")
axis.legend(loc="lower right")
plt.show()

# %% [markdown]
# ## 2. NTK-aware base scaling
#
# bloc97 (2023, "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size without any
# fine-tuning and minimal perplexity degradation", r/LocalLLaMA) kept the positions and raised the **base**
# instead. The name comes from the neural tangent kernel view of networks fed Fourier features: they learn the
# fine detail of their input through the high frequencies, and interpolation, which lowers every frequency, takes
# that detail away. Raising the base slows each pair by a different amount:
#
# $$ \text{base}' = \text{base}\cdot s^{d_h/(d_h-2)}, \qquad
#    \theta'_i = \text{base}'^{-2i/d_h} = \theta_i \, s^{-2i/(d_h-2)}. $$
#
# The exponent $d_h/(d_h-2)$ is chosen so that the two ends are exact: pair 0 keeps $\theta_0 = 1$ (its exponent is
# 0) and the slowest pair, $i = d_h/2 - 1$, gets $\theta_i / s$, as under interpolation: at position $sL$ it has
# turned exactly as far as it had at $L$. The pairs between are slowed by factors that grow geometrically from 1 to
# $s$. It is one line of a configuration (`rope_theta`), which is why it spread at once (Code Llama, Rozière et al.
# 2023, raised its base to $10^6$ for its long-context training). YaRN's paper (Peng et al. 2023, arXiv:2309.00071,
# section 3.1) writes it up.

# %% [solution: ntk_inverse_frequencies]

# %% [tests: ntk_inverse_frequencies_values]
assert_close(ntk_inverse_frequencies(4, factor=4.0), torch.tensor([1.0, 0.0025]),
             what="ntk_inverse_frequencies(4, factor=4.0)", rtol=1e-5,
             hint="base' = 10000 * 4 ** (4 / 2) = 160000, theta = [160000 ** 0, 160000 ** (-2/4)].")
got = ntk_inverse_frequencies(64, factor=8.0)
assert tuple(got.shape) == (32,) and got.dtype == torch.float32, \
    f"expected (dh/2,) = (32,) float32, got {tuple(got.shape)} {got.dtype}"

# %% [tests: ntk_inverse_frequencies_invalid_args]
assert_raises(ValueError, ntk_inverse_frequencies, 7, factor=2.0, hint="head_dim must be even.")
assert_raises(ValueError, ntk_inverse_frequencies, 8, factor=0.5, hint="a factor below 1 shrinks the context.")

# %% [demo: ntk_picture]
# Each pair's frequency before and after, for LLaMA 2's head (dh = 128) read 8 times as long: your NTK-aware
# frequencies against interpolation's theta / 8.
head_dim, factor = 128, 8.0
plain = rope_frequencies(head_dim)
ntk = ntk_inverse_frequencies(head_dim, factor=factor).double()  # (dh/2,)
print(f"NTK-aware base for s = {factor:g}, dh = {head_dim}: {10000 * factor ** (head_dim / (head_dim - 2)):.0f}")
print("slowdown theta / theta' of pairs 0, 16, 32, 48, 63:",
      ", ".join(f"{(plain / ntk)[i].item():.2f}" for i in (0, 16, 32, 48, 63)))
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.6))
pairs = torch.arange(head_dim // 2)
axis.semilogy(pairs, plain, color="black", label="RoPE as trained")
axis.semilogy(pairs, plain / factor, "--", label=f"interpolation: theta / {factor:g}")
axis.semilogy(pairs, ntk, label="ntk_inverse_frequencies: the base raised")
axis.set(xlabel="pair i (fast to slow)", ylabel="theta_i (radians per position)",
         title=f"NTK-aware scaling, s = {factor:g}: the fast pairs kept, the slowest divided by s")
axis.legend(loc="lower left")
plt.show()

# %% [markdown]
# ## 3. Dynamic NTK scaling
#
# A model set once for $s = 8$ reads every text with the scaled frequencies, the short ones too, which it was
# trained to read with the plain ones. Dynamic NTK scaling (emozilla 2023, "Dynamically Scaled RoPE further increases
# performance of long context LLaMA with zero fine-tuning", r/LocalLLaMA; YaRN's paper, section 3.3) sets the factor
# from the length $n$ of the text being read, and recomputes the frequencies as it grows:
#
# $$ s(n) = \max\!\Big(1,\; \text{factor}\cdot\frac{n}{L} - (\text{factor} - 1)\Big), \qquad
#    \theta'_i = \text{ntk\_inverse\_frequencies}\big(d_h,\ \text{factor}=s(n)\big). $$
#
# Up to $L$ nothing changes: a short text is read exactly as in training. Past $L$ the base rises with the length.
# With factor 1, $s(n) = n/L$: just enough for the text read. One caveat of real use: a cache of keys that were
# turned at the frequencies of a shorter length keeps those turns when the frequencies change, unless the keys are
# cached before their rotation.

# %% [solution: dynamic_ntk_inverse_frequencies]

# %% [tests: dynamic_ntk_inverse_frequencies_values]
assert_close(dynamic_ntk_inverse_frequencies(4, length=4096, trained_length=2048, factor=2.0),
             torch.tensor([1.0, 1 / 300]), what="dynamic_ntk_inverse_frequencies(4, length=4096, ...)", rtol=1e-5,
             hint="s = 2 * 4096 / 2048 - 1 = 3, base' = 10000 * 3 ** 2.")

# %% [tests: dynamic_ntk_inverse_frequencies_short]
assert_close(dynamic_ntk_inverse_frequencies(4, length=1000, trained_length=2048, factor=2.0),
             torch.tensor([1.0, 0.01]), what="dynamic_ntk_inverse_frequencies(4, length=1000, ...)", rtol=1e-5,
             hint="up to the trained length nothing is scaled.")

# %% [tests: dynamic_ntk_inverse_frequencies_invalid_args]
assert_raises(ValueError, dynamic_ntk_inverse_frequencies, 8, length=4096, trained_length=2048, factor=0.5,
              hint="a factor below 1.")

# %% [demo: dynamic_picture]
# The slowest pair's frequency against the length of the text read (LLaMA 2: dh = 128, L = 4096): dynamic NTK with
# factor 1 and 2, your static NTK set once for s = 8 (drawn where written), and RoPE as trained.
head_dim, trained = 128, 4096
lengths = torch.linspace(trained / 4, 8 * trained, 64).round().int().tolist()
dynamic = {factor: torch.stack([dynamic_ntk_inverse_frequencies(head_dim, length=length, trained_length=trained,
                                                                factor=factor)[-1] for length in lengths])
           for factor in (1.0, 2.0)}  # one call per length: the frequencies are recomputed as the text grows
static = written(ntk_inverse_frequencies, head_dim, factor=8.0)
print(f"s(n) at n = 8L: factor 1 -> {8.0:g}, factor 2 -> {2 * 8 - 1:g} (the base then rises past what 8L needs)")
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.6))
relative = [length / trained for length in lengths]
axis.semilogy(relative, [rope_frequencies(head_dim)[-1].item()] * len(lengths), color="black", label="RoPE as trained")
if static is not None:
    axis.semilogy(relative, [static[-1].item()] * len(lengths), "--", label="NTK set for s = 8, at every length")
for factor, slowest in dynamic.items():
    axis.semilogy(relative, slowest, label=f"dynamic NTK, factor {factor:g}")
axis.axvline(1.0, color="0.5", linestyle=":")
axis.set(xlabel="length read n / L", ylabel="theta of the slowest pair",
         title="dynamic NTK: unscaled up to L, scaled as the text grows")
axis.legend(loc="upper right", bbox_to_anchor=(1.0, 0.93))  # under RoPE's line, above the curves
plt.show()

# %% [markdown]
# ## 4. YaRN's ramp: interpolate the slow pairs, keep the fast ones
#
# NTK-aware scaling still slows every pair but the first a little, the fast ones too. YaRN (Peng, Quesnelle, Fan and
# Shippole 2023, "YaRN: Efficient Context Window Extension of Large Language Models", arXiv:2309.00071, section 3.2,
# "NTK-by-parts") decides per pair by how often it turns within $L$, the $r_i = L/\lambda_i$ of part 1. A pair that
# turns more than $\beta_\text{fast} = 32$ times keeps its frequency (extrapolation: its angles were all seen); a pair
# that turns fewer than $\beta_\text{slow} = 1$ times is interpolated, $\theta_i/s$; between them a straight ramp
# over the pair index. The pair that turns exactly $\beta$ times solves $L\,\theta_i / 2\pi = \beta$:
#
# $$ i(\beta) = \frac{d_h \ln\!\big(L / (2\pi\beta)\big)}{2 \ln \text{base}}, \qquad
#    \text{low} = \lfloor i(\beta_\text{fast}) \rfloor, \quad \text{high} = \lceil i(\beta_\text{slow}) \rceil, $$
#
# $$ \text{ramp}_i = \text{clamp}\Big(\frac{i - \text{low}}{\text{high} - \text{low}}, 0, 1\Big), \qquad
#    \theta'_i = (1 - \text{ramp}_i)\,\theta_i + \text{ramp}_i\,\frac{\theta_i}{s}. $$
#
# DeepSeek V3's configuration sets it, and Qwen 2.5's documentation adds it for texts past 32K tokens (Hugging Face's
# `rope_type: "yarn"`).

# %% [solution: yarn_inverse_frequencies]

# %% [tests: yarn_inverse_frequencies_values]
assert_close(yarn_inverse_frequencies(8, factor=4.0, trained_length=2048), torch.tensor([1.0, 0.1, 0.00625, 0.00025]),
             what="yarn_inverse_frequencies(8, factor=4.0, trained_length=2048)", rtol=1e-5,
             hint="low = floor(1.008) = 1, high = ceil(2.513) = 3: the ramp is [0, 0, 0.5, 1].")

# %% [tests: yarn_inverse_frequencies_options]
untruncated = yarn_inverse_frequencies(8, factor=4.0, trained_length=2048, truncate=False)
assert tuple(untruncated.shape) == (4,), f"expected (4,), got {tuple(untruncated.shape)}"

# %% [tests: yarn_inverse_frequencies_invalid_args]
assert_raises(ValueError, yarn_inverse_frequencies, 8, factor=4.0, trained_length=2048, beta_fast=1.0,
              beta_slow=32.0, hint="beta_slow above beta_fast.")

# %% [demo: yarn_picture]
# How much each pair is slowed, theta / theta', for LLaMA 2 read 8 times as long: interpolation, your NTK (where
# written) and your YaRN, with the number of turns each pair makes within L on the right.
head_dim, trained, factor = 128, 4096, 8.0
plain = rope_frequencies(head_dim)
yarn = yarn_inverse_frequencies(head_dim, factor=factor, trained_length=trained).double()  # (dh/2,)
ntk = written(ntk_inverse_frequencies, head_dim, factor=factor)
turns = trained * plain / (2 * math.pi)  # r_i
kept, divided = int(((plain / yarn) < 1.0001).sum()), int(((plain / yarn) > factor * 0.9999).sum())
print(f"YaRN keeps {kept} pairs (more than 32 turns within L), divides {divided} by {factor:g} (less than 1 turn), "
      f"and ramps {head_dim // 2 - kept - divided} between.")
figure, (left, right) = plt.subplots(1, 2, layout="constrained", figsize=(9, 3.6))
pairs = torch.arange(head_dim // 2)
left.plot(pairs, torch.full((head_dim // 2,), factor), "--", label="interpolation")
if ntk is not None:
    left.plot(pairs, plain / ntk.double(), label="NTK-aware")
left.plot(pairs, plain / yarn, label="YaRN")
left.set(xlabel="pair i", ylabel="slowdown theta / theta'", title="how much each pair is slowed")
left.legend(loc="center left")
right.semilogy(pairs, turns, color="black", label="turns within L")
right.axhline(32, color="C2", linestyle="--", label="beta_fast = 32")
right.axhline(1, color="C3", linestyle=":", label="beta_slow = 1")
right.set(xlabel="pair i", ylabel="r_i = L theta_i / (2 pi)", title="YaRN decides by the turns")
right.legend(loc="upper right")
plt.show()

# %% [markdown]
# ## 5. YaRN's attention temperature
#
# Reading $s$ times as many keys, with their angles packed closer, the softmax over them comes out flatter: the
# attention spreads over more words and its sharp choices blur. YaRN (section 3.4) sharpens it back with a
# temperature $t < 1$ on the logits, $\text{softmax}\big(q\cdot k / (t\sqrt{d_h})\big)$, fitted on LLaMA models as
#
# $$ \sqrt{1/t} = 0.1 \cdot \text{mscale} \cdot \ln s + 1 . $$
#
# Implementations multiply cos and sin (so the query and the key) by $\sqrt{1/t}$, and the scores get its square:
# `yarn_attention_scale` returns that square, the factor on the scores, $1/t$. It multiplies the **scores**, before
# the softmax; scaling the values instead would only scale the output and leave the attention as flat as it was.

# %% [solution: yarn_attention_scale]

# %% [tests: yarn_attention_scale_values]
assert abs(yarn_attention_scale(4.0) - 1.296477) < 1e-6, f"expected 1.296477, got {yarn_attention_scale(4.0)}"

# %% [tests: yarn_attention_scale_invalid_args]
assert_raises(ValueError, yarn_attention_scale, 0.5, hint="a factor below 1.")

# %% [demo: temperature_picture]
# The factor on the scores against s, and what it does to one softmax: random scores over n keys, their entropy
# (how spread the attention is) at n = 4096, at 8 times as many keys, and at 8 times as many with YaRN's factor.
factors = [1, 2, 4, 8, 16, 32, 64]
scales = [yarn_attention_scale(float(factor)) for factor in factors]
generator = torch.Generator().manual_seed(0)
logits = torch.randn(8 * 4096, generator=generator) * 2.0  # the scores of one query
entropy = lambda scores: -(scores.softmax(-1) * scores.log_softmax(-1)).sum().item()  # noqa: E731
spread = {"4096 keys": entropy(logits[:4096]), "8 x 4096 keys": entropy(logits),
          "8 x 4096, YaRN's 1/t": entropy(logits * yarn_attention_scale(8.0))}
for name, nats in spread.items():
    print(f"{name:<22} entropy {nats:.2f} nats")
figure, (left, right) = plt.subplots(1, 2, layout="constrained", figsize=(9, 3.4))
left.semilogx(factors, scales, "o-", base=2)
left.set(xlabel="factor s", ylabel="1/t, on the scores", title="yarn_attention_scale")
right.bar(list(spread), list(spread.values()), color=["C0", "C1", "C2"])
right.set(ylabel="entropy of the softmax (nats)", title="more keys spread it; 1/t sharpens it")
right.tick_params(axis="x", labelsize=8)
plt.show()

# %% [markdown]
# ## 6. Llama 3's wavelength rule
#
# Llama 3.1 (Llama Team, AI @ Meta, 2024, "The Llama 3 Herd of Models", arXiv:2407.21783; the rule as released in
# its code, `apply_scaling`) takes the 8192 positions of Llama 3 to 128K with the same idea as YaRN (and a stage of
# long-context training on top), stated with wavelengths $\lambda_i = 2\pi/\theta_i$ and two thresholds:
#
# $$ \theta'_i = \begin{cases}
#      \theta_i & \lambda_i < L / \text{high\_freq\_factor} \quad\text{(fast: kept)} \\
#      \theta_i / s & \lambda_i > L / \text{low\_freq\_factor} \quad\text{(slow: interpolated)} \\
#      (1 - \text{smooth}_i)\,\theta_i / s + \text{smooth}_i\,\theta_i & \text{between,}
#    \end{cases} \qquad
#    \text{smooth}_i = \frac{L/\lambda_i - \text{low\_freq\_factor}}{\text{high\_freq\_factor} - \text{low\_freq\_factor}} . $$
#
# With Llama 3.1's settings (base 500000, $s = 8$, low 1, high 4, $L = 8192$): wavelengths under 2048 are kept,
# over 8192 divided by 8. $L/\lambda_i$ is again the number of turns within $L$: the blend is linear in the turns,
# where YaRN's ramp is linear in the pair index (in $\ln \lambda_i$), and there is no temperature.

# %% [solution: llama3_inverse_frequencies]

# %% [tests: llama3_inverse_frequencies_values]
assert_close(llama3_inverse_frequencies(8), torch.tensor([1.0, 0.037606, 0.00052485, 6.6479e-06]),
             what="llama3_inverse_frequencies(8)", rtol=1e-4,
             hint="wavelengths 6.3 and 167 are kept, 4443 is blended, 118144 is divided by 8.")

# %% [tests: llama3_inverse_frequencies_invalid_args]
assert_raises(ValueError, llama3_inverse_frequencies, 64, low_freq_factor=4.0, high_freq_factor=1.0,
              hint="high_freq_factor must be above low_freq_factor.")

# %% [demo: llama3_picture]
# Llama 3.1's 64 pairs (dh = 128, base 500000, L = 8192): each wavelength before and after your scaling.
head_dim, trained = 128, 8192
before = 2 * math.pi / rope_frequencies(head_dim, base=500000.0)  # (dh/2,)
after = 2 * math.pi / llama3_inverse_frequencies(head_dim).double()  # (dh/2,)
ratio = after / before
print(f"kept: {int((ratio < 1.0001).sum())} pairs, divided by 8: {int((ratio > 7.9999).sum())}, "
      f"blended: {int(((ratio >= 1.0001) & (ratio <= 7.9999)).sum())}")
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.6))
pairs = torch.arange(head_dim // 2)
axis.semilogy(pairs, before, color="black", label="before: RoPE, base 500000")
axis.semilogy(pairs, after, label="after: llama3_inverse_frequencies")
axis.axhline(trained / 4, color="C2", linestyle="--", label="L / high_freq_factor = 2048")
axis.axhline(trained / 1, color="C3", linestyle=":", label="L / low_freq_factor = 8192")
axis.set(xlabel="pair i (fast to slow)", ylabel="wavelength (positions)", title="Llama 3: long wavelengths times 8")
axis.legend(loc="upper left")
plt.show()

# %% [markdown]
# ### Every scaling side by side
#
# One head, one setting (LLaMA 2's: $d_h = 128$, base 10000, $L = 4096$, $s = 8$), every method's slowdown per pair,
# from your functions (a method whose function is not written yet is left out of the picture, and named). Read it
# against part 1: interpolation slows everything; NTK slows everything but pair 0, by a smooth geometric law (dynamic
# NTK at $8L$ with factor 1 has $s = 8$: the same frequencies, the dotted line on the thick one); YaRN and Llama 3 keep
# the pairs that turn many times within $L$ and interpolate those that turn less than once.

# %% [demo: all_scalings_picture]
head_dim, trained, factor = 128, 4096, 8.0
plain = rope_frequencies(head_dim)
found = {"interpolation": plain / factor,
         "NTK-aware": written(ntk_inverse_frequencies, head_dim, factor=factor),
         "dynamic NTK at 8L (factor 1)": written(dynamic_ntk_inverse_frequencies, head_dim, length=8 * trained,
                                                 trained_length=trained, factor=1.0),
         "YaRN": written(yarn_inverse_frequencies, head_dim, factor=factor, trained_length=trained),
         "Llama 3": written(llama3_inverse_frequencies, head_dim, base=10000.0, factor=factor, trained_length=trained)}
missing = [name for name, theta in found.items() if theta is None]
if missing:
    print("Not written yet, so not drawn:", ", ".join(missing))
figure, axis = plt.subplots(layout="constrained", figsize=(8, 3.6))
pairs = torch.arange(head_dim // 2)
styles = {"interpolation": "--", "NTK-aware": "-", "dynamic NTK at 8L (factor 1)": ":"}  # the last two are one line
for name, theta in found.items():
    if theta is not None:
        axis.plot(pairs, plain / theta.double(), styles.get(name, "-"), label=name,
                  linewidth=3 if name == "NTK-aware" else 1.5)
axis.set(xlabel="pair i (fast to slow)", ylabel="slowdown theta / theta'", title=f"every scaling, s = {factor:g}")
axis.legend(loc="upper left")
plt.show()

# %% [markdown]
# ## 7. Scores at scaled frequencies
#
# Every method above is a set of frequencies; attention uses them in one way. `scaled_rope_scores` turns pair $i$ of
# the query at position $m$ by $m\,\theta'_i$ and of the key at $n$ by $n\,\theta'_i$, with the given
# `apply_rotary`, and takes the scaled dot products, times YaRN's factor where there is one:
#
# $$ \text{score}_{mn} = \frac{\text{attention\_scale}}{\sqrt{d_h}}\; R(m\theta')\,q_m \cdot R(n\theta')\,k_n . $$
#
# The pairs are laid out "rotate half", $(x_i, x_{i + d_h/2})$, as in LLaMA and Hugging Face, the layout in which
# every frequency of this unit is listed. A rotation by $t\theta'_i$ is a rotation by the angle itself, so you may
# turn the pairs yourself (cos and sin of the angles) or reuse `apply_rotary` for any frequencies at all: on a
# vector of $d_h = 2$ its one pair turns at $\theta_0 = \text{base}^0 = 1$ radian per unit of position, so given
# the angles $t\theta'_i$ as its positions, with each pair laid out as a vector of its own, it turns pair $i$ by
# exactly $t\theta'_i$.

# %% [solution: scaled_rope_scores]

# %% [tests: scaled_rope_scores_values]
one = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
assert_close(scaled_rope_scores(one, one, torch.tensor([0.5]), positions_q=torch.tensor([3]),
                                positions_k=torch.tensor([1])), torch.tensor([[[[0.382051]]]]),
             what="scaled_rope_scores(q, k, [0.5]) at positions 3 and 1", rtol=1e-5,
             hint="cos((3 - 1) * 0.5) / sqrt(2).")

# %% [tests: scaled_rope_scores_contract]
scores = scaled_rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.ones(4) / 10)
assert tuple(scores.shape) == (2, 3, 5, 7), f"expected (2, 3, 5, 7), got {tuple(scores.shape)}"

# %% [tests: scaled_rope_scores_attention_scale]
assert_close(scaled_rope_scores(one, one, torch.tensor([0.5]), attention_scale=2.0), torch.tensor([[[[2 ** 0.5]]]]),
             what="scaled_rope_scores(q, q, [0.5], attention_scale=2.0)", rtol=1e-5,
             hint="the scale multiplies the score 1 / sqrt(2) once.")

# %% [tests: scaled_rope_scores_invalid_args]
assert_raises(ValueError, scaled_rope_scores, torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8), torch.ones(8),
              hint="inverse_frequencies has one entry per pair, (dh/2,).")

# %% [demo: scores_picture]
# What the model sees: the score of a query with the same vector as key, n - m positions back, for the head of
# part 9's model (dh = 16, L = 32) read 8 times as long, with RoPE's own frequencies and with each scaling (drawn
# where written). The grey band is the distances met in training.
head_dim, trained, factor = 16, 32, 8.0
vector = torch.randn(1, 1, 1, head_dim, generator=torch.Generator().manual_seed(3))
distances = torch.arange(8 * trained)
settings = {"RoPE as trained": (rope_frequencies(head_dim).float(), 1.0),
            "interpolation": ((rope_frequencies(head_dim) / factor).float(), 1.0),
            "NTK-aware": (written(ntk_inverse_frequencies, head_dim, factor=factor), 1.0),
            "YaRN": (written(yarn_inverse_frequencies, head_dim, factor=factor, trained_length=trained),
                     written(yarn_attention_scale, factor)),
            "Llama 3": (written(llama3_inverse_frequencies, head_dim, base=10000.0, factor=factor,
                                trained_length=trained), 1.0)}
curves = {name: scaled_rope_scores(vector, vector.expand(1, 1, len(distances), head_dim), theta,
                                   attention_scale=scale, positions_q=torch.tensor([0]), positions_k=distances)[0, 0, 0]
          for name, (theta, scale) in settings.items() if theta is not None and scale is not None}
figure, axis = plt.subplots(layout="constrained", figsize=(9, 3.6))
for name, curve in curves.items():
    axis.plot(distances, curve, label=name, linewidth=1.2 if name == "RoPE as trained" else 1.0)
axis.axvspan(0, trained - 1, color="0.9", label="distances seen in training")
axis.set(xlabel="distance n - m", ylabel="score of q with itself", title="one score, read 8 times as far")
axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # beside the curves, never over them
plt.show()

# %% [markdown]
# ## 8. Speed
#
# The grader times your `scaled_rope_scores` with YaRN-like frequencies at long lengths against the reference, once
# it is correct: {timing_bands} of the reference's time, none beyond; at most {rubric:TIMING_MEMORY_SCORES}
# score-sized tensors of memory; no Python loop over positions or pairs. The check below counts the lines and tensor
# operations your function runs at growing lengths, as the grader does: a count that grows with the length is a loop.

# %% [tests: scaled_rope_speed]
assert_no_loops(scaled_rope_scores, inputs=lambda length: (torch.randn(1, 4, length, 8), torch.randn(1, 4, length, 8),
                                                           torch.ones(4) / 10))

# %% [markdown]
# ## 9. Train short, read long: every method of the course
#
# The first unit's tiny language model (`capstone.py`, in this folder: two blocks, width 64, four heads of
# $d_h = 16$, the kit's short stories) is trained at a context of $L = 32$ words, once for each method that needs
# weights of its own: the first unit's **sinusoidal**, **learned** and **T5**, the second unit's **RoPE** and
# **ALiBi**. Each model then reads held-out windows of 32, 64, 128 and 256 words (up to $8L$), and the loss is taken
# over the last 16 words of each window, the words furthest from the start.
#
# Interpolation and this unit's four scalings change nothing but the frequencies at which RoPE turns the queries and
# keys, so they need **no retraining**: they are five more readings of the **one** trained RoPE model (through the
# second unit's `scaled_positions`, and through your `scaled_rope_scores` with your frequencies, set for $s = 8$).
# None is tuned after scaling, not even interpolation, which Chen et al. do tune: what differs between them is the
# frequencies alone. Dynamic NTK takes its factor from each window's length (factor 1: $s = n/L$); the others are set
# once for $8L$ and read every window with it, as a model configured for $8L$ would.
#
# The first two units' methods run on those units' references where the kit is installed, else on your own work:
# your `positional_encodings.ipynb` and `rotary_alibi.ipynb` (or `.py` files), beside this notebook or in those
# units' folders next to this one (`../positional_encodings/`, where the course's zips unpack); only your own cells
# of them run, not their lessons. This unit's methods run on your functions. A method that cannot run is left
# out, and the table says why.
# About 40 seconds on the kit's 2-core CPU.

# %% [demo: long_run]
import os
import time

from long_capstone import conclusions, figure_of, train_short_read_long

# When the notebook is graded it runs again: nothing is trained then. POSITIONAL_KIT_QUICK=1 trains 3 steps only.
GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"
QUICK = os.environ.get("POSITIONAL_KIT_QUICK") == "1"
started = time.perf_counter()
experiment = None
if GRADING:
    print("nbgrader is grading this notebook: part 9 trains nothing here, so that grading the class stays fast. "
          "Run the notebook yourself to see it. Part 9 is not graded.")
else:
    experiment = train_short_read_long(globals(), seed=0, steps=3 if QUICK else 200,
                                       stories_count=300 if QUICK else 3000)
    if QUICK:
        print("POSITIONAL_KIT_QUICK is set: 3 training steps only, so the figures are not the lesson's.")
    for unit, source in experiment.sources.items():
        print(f"The {unit} methods: {source}.")
    print(experiment.table())
print(f"All of it: {time.perf_counter() - started:.0f} s")

# %% [demo: long_picture]
if experiment is not None and experiment.readings:
    figure_of(experiment)
    plt.show()
else:  # the grading run trains nothing: the plot would be empty
    print("No model was trained in this run, so there are no curves to draw.")

# %% [markdown]
# ### What this run shows
#
# The sentences below are computed from the table above, on this machine and this run: read them, not a
# summary written in advance. Which method stays closest to its own loss at $L$ when it reads $8L$, which reads
# $8L$ best, which cannot read past $L$ at all, whether each RoPE reading beats RoPE read as trained, and what the
# scalings set for $8L$ cost at $L$ itself.

# %% [demo: long_conclusions]
if experiment is not None:
    for sentence in conclusions(experiment):
        print("*", sentence)
else:
    print("No model was trained in this run: run the notebook yourself for the conclusions.")

# %% [markdown]
# **How to read them.** Each mechanism predicts where to look. A table of learned positions has no row past $L$:
# it refuses. The sinusoidal table hands the first layer vectors it never saw. T5 and ALiBi see only distances, and
# both were trained on distances up to $L$ only: the T5 buckets of the longest distances (this model's reach 64)
# were never used in training, so their numbers are still the zeros they started at, while ALiBi's penalty keeps
# growing as it did. RoPE read as trained meets its slow pairs at new angles (part 1). Interpolation read without
# tuning squeezes the fast pairs, at $L$ too. NTK, YaRN and Llama 3 keep the fast pairs and interpolate the slow
# ones, each by its own law (part 6); set for $8L$, they change the short texts too, which dynamic NTK does not. A model this small, trained for a few
# hundred steps, is not LLaMA: the size of the differences here is this model's, and a different seed moves the
# close ones.
#
# ## What you built
#
# | method | what changes | the rule | paper |
# |---|---|---|---|
# | position interpolation | every frequency | $\theta_i / s$ | Chen et al. 2023 |
# | NTK-aware | the base | $\text{base}\cdot s^{d_h/(d_h-2)}$ | bloc97 2023 |
# | dynamic NTK | the base, with the length read | $s(n) = \max(1, f n/L - (f-1))$ | emozilla 2023 |
# | YaRN | each pair by its turns within $L$, and the scores | ramp between $\beta_\text{fast}$ and $\beta_\text{slow}$; $1/t = (0.1\ln s + 1)^2$ | Peng et al. 2023 |
# | Llama 3 | each pair by its wavelength | kept under $L/4$, divided over $L$, blended between | Llama Team 2024 |
#
# All of them are changes of RoPE's frequencies at reading time, and `scaled_rope_scores` applies any of them.
