"""The third unit's reference equals Hugging Face transformers' rope scaling (``modeling_rope_utils``), on every
configuration both accept over hypothesis-drawn grids, and its scores equal an independent rotation by complex
numbers and LLaMA's attention with each scaling (no weights: configs only).

What "accepted" means: the configuration's values lie in the reference's domain (its docstrings: an even head
size, a base above 1, a factor of at least 1, ...) and transformers' own validation (``validate_rope``) logs no
warning about them; each test asserts the second for every configuration it draws. Hugging Face has no static
NTK-aware rope type: its ``dynamic`` type at factor 1 read at length ``factor * L`` is the same formula
(s = length / L), and stands in for it.

Tolerance: transformers computes the frequencies in float32 (``1 / base ** (arange / dim)``), the reference in
float64 rounded once; float32's rounding of the exponent moves base ** x by about ln(base) * 6e-8 relatively, below
2e-6 for every base drawn here, and YaRN's float32 ramp by float32's rounding times the factor. The frequencies
agree to 1e-5 relatively (the largest error seen is printed), the attention scales to 1e-12.

How many configurations are checked: each test counts the distinct ones it compared and prints the count (run
with ``-s``); drawn from a fixed seed, the counts are the same on every run of the same hypothesis version, in any
checkout. With transformers 5.25 and hypothesis 6.170: ntk 300, dynamic NTK 398, YaRN 500 (its attention factor
too), YaRN's scale against yarn_get_mscale 290, Llama 3 400: 1888 configurations of the frequency functions; the
scores through LLaMA's attention with each scaling 60 more (1948 against transformers), and the rotation by complex
numbers 80 (2028 in all). The largest relative errors of the frequencies were 8e-7 (NTK, dynamic), 6e-6 (YaRN) and
4e-6 (Llama 3; its tolerance grows where the blend is narrow, see the test).
"""

import logging
import math

import pytest
import torch
from hypothesis import given, seed, settings, strategies as st

from solutions.long_context import (dynamic_ntk_inverse_frequencies, llama3_inverse_frequencies,
                                    ntk_inverse_frequencies, scaled_rope_scores, yarn_attention_scale,
                                    yarn_inverse_frequencies)

transformers = pytest.importorskip("transformers")
rope_utils = pytest.importorskip("transformers.modeling_rope_utils")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")

RTOL = 1e-5
EVEN = st.integers(1, 128).map(lambda half: 2 * half)  # head sizes 2 .. 256
BASES = st.one_of(st.sampled_from([10000.0, 500000.0, 1e6, 50000.0]), st.floats(1.5, 1e7))
FACTORS = st.one_of(st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 40.0]), st.floats(1.0, 64.0))
LENGTHS = st.one_of(st.sampled_from([2048, 4096, 8192, 32768]), st.integers(1, 2 ** 17))


SEARCH_SEED = 20261204


def run(search, examples):
    """Run a hypothesis search of ``examples`` drawn configurations from a fixed seed: the same ones every run and in
    every checkout (``derandomize`` drew other ones in a clone at another path, where one of them failed)."""
    return settings(max_examples=examples, deadline=None, database=None)(seed(SEARCH_SEED)(search))()


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


def hf_config(head_dim, max_position_embeddings, rope_parameters):
    """A LlamaConfig with only what the rope functions read, and transformers' validation warnings about it (an
    empty list: the configuration is accepted)."""
    caught, logger = _Warnings(), rope_utils.logger
    logger.addHandler(caught)
    try:
        config = transformers.LlamaConfig(hidden_size=head_dim, num_attention_heads=1, num_key_value_heads=1,
                                          head_dim=head_dim, intermediate_size=8, num_hidden_layers=1, vocab_size=8,
                                          max_position_embeddings=max_position_embeddings,
                                          rope_parameters=dict(rope_parameters))
        config.validate_rope()
    finally:
        logger.removeHandler(caught)
    return config, caught.records


def assert_same(ours, theirs, what, rtol=RTOL):
    """Equal to ``rtol`` relatively, entry by entry; returns the largest relative error."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == torch.float32, what
    error = ((ours.double() - theirs.double()).abs() / theirs.double().abs()).max().item()
    assert error <= rtol, f"{what}: relative error {error:.3g}\nours   {ours}\ntheirs {theirs}"
    return error


def report(name, checked, errors=None, against=None):
    against = against or f"transformers {transformers.__version__}"
    largest = f" (largest relative error {max(errors, default=0.0):.2e})" if errors is not None else ""
    print(f"\n{name}: {len(checked)} configurations agree with {against}{largest}")


def test_ntk_inverse_frequencies_equal_dynamic_ntk_at_factor_1_read_at_factor_times_l():
    checked, errors = set(), []

    @given(half=st.integers(2, 128), base=BASES, factor=FACTORS, trained_length=LENGTHS)
    def search(half, base, factor, trained_length):
        head_dim = 2 * half
        config, warned = hf_config(head_dim, trained_length, {"rope_type": "dynamic", "rope_theta": base,
                                                              "factor": 1.0})
        assert warned == []
        theirs, scale = rope_utils._compute_dynamic_ntk_parameters(config, "cpu", seq_len=factor * trained_length)
        errors.append(assert_same(ntk_inverse_frequencies(head_dim, base=base, factor=factor), theirs,
                                  f"ntk dh={head_dim} base={base} factor={factor}"))
        assert scale == 1.0
        checked.add((head_dim, base, factor, trained_length))

    run(search, 300)
    report("ntk_inverse_frequencies", checked, errors)
    assert len(checked) >= 250


def test_dynamic_ntk_inverse_frequencies_equal_transformers_dynamic_at_every_length():
    checked, errors = set(), []

    @given(half=st.integers(2, 128), base=BASES, factor=FACTORS, trained_length=LENGTHS,
           ratio=st.one_of(st.sampled_from([0.5, 1.0, 2.0, 4.0]), st.floats(1e-3, 64.0)))
    def search(half, base, factor, trained_length, ratio):
        head_dim, length = 2 * half, max(1, round(ratio * trained_length))
        config, warned = hf_config(head_dim, trained_length, {"rope_type": "dynamic", "rope_theta": base,
                                                              "factor": factor})
        assert warned == []
        theirs, _ = rope_utils._compute_dynamic_ntk_parameters(config, "cpu", seq_len=length)
        ours = dynamic_ntk_inverse_frequencies(head_dim, length=length, trained_length=trained_length, base=base,
                                               factor=factor)
        errors.append(assert_same(ours, theirs, f"dynamic dh={head_dim} base={base} factor={factor} "
                                                f"L={trained_length} length={length}"))
        checked.add((head_dim, base, factor, trained_length, length))

    run(search, 400)
    report("dynamic_ntk_inverse_frequencies", checked, errors)
    assert len(checked) >= 350


@st.composite
def betas(draw):
    slow = draw(st.one_of(st.just(1.0), st.floats(0.25, 8.0)))
    return slow * draw(st.one_of(st.just(32.0), st.floats(1.0, 64.0))), slow


def test_yarn_inverse_frequencies_and_attention_factor_equal_transformers_yarn():
    checked, errors = set(), []

    @given(head_dim=EVEN, base=BASES, factor=FACTORS, trained_length=LENGTHS, beta=st.one_of(st.none(), betas()),
           truncate=st.sampled_from([None, True, False]))
    def search(head_dim, base, factor, trained_length, beta, truncate):
        parameters = {"rope_type": "yarn", "rope_theta": base, "factor": factor,
                      "original_max_position_embeddings": trained_length}
        if beta is not None:
            parameters |= {"beta_fast": beta[0], "beta_slow": beta[1]}
        if truncate is not None:
            parameters["truncate"] = truncate
        config, warned = hf_config(head_dim, trained_length, parameters)  # implicit factor 1: no warning
        assert warned == []
        theirs, attention_factor = rope_utils._compute_yarn_parameters(config, "cpu")
        fast, slow = (32.0, 1.0) if beta is None else beta
        ours = yarn_inverse_frequencies(head_dim, base=base, factor=factor, trained_length=trained_length,
                                        beta_fast=fast, beta_slow=slow, truncate=truncate is not False)
        errors.append(assert_same(ours, theirs, f"yarn {parameters} dh={head_dim}"))
        # Hugging Face's attention factor multiplies cos and sin, so q and k each: the scores get its square.
        assert math.isclose(yarn_attention_scale(factor), attention_factor ** 2, rel_tol=1e-12, abs_tol=0)
        checked.add((head_dim, base, factor, trained_length, beta, truncate))

    run(search, 500)
    report("yarn_inverse_frequencies", checked, errors)
    assert len(checked) >= 450


def test_yarn_attention_scale_is_the_square_of_yarn_get_mscale():
    checked = set()

    @given(factor=FACTORS, mscale=st.one_of(st.just(1.0), st.floats(0.05, 4.0)))
    def search(factor, mscale):
        root = rope_utils.yarn_get_mscale(factor, mscale)
        assert math.isclose(yarn_attention_scale(factor, mscale=mscale), root * root, rel_tol=1e-12, abs_tol=0)
        checked.add((factor, mscale))

    run(search, 300)
    report("yarn_attention_scale", checked)
    assert len(checked) >= 250


def test_llama3_inverse_frequencies_equal_transformers_llama3():
    checked, errors = set(), []

    @given(head_dim=EVEN, base=BASES, factor=FACTORS, trained_length=LENGTHS,
           low=st.one_of(st.just(1.0), st.floats(0.05, 8.0)), spread=st.one_of(st.just(4.0), st.floats(1.01, 32.0)))
    def search(head_dim, base, factor, trained_length, low, spread):
        parameters = {"rope_type": "llama3", "rope_theta": base, "factor": factor, "low_freq_factor": low,
                      "high_freq_factor": low * spread, "original_max_position_embeddings": trained_length}
        config, warned = hf_config(head_dim, 2 * trained_length, parameters)
        assert warned == []
        theirs, _ = rope_utils._compute_llama3_parameters(config, "cpu")
        ours = llama3_inverse_frequencies(head_dim, base=base, factor=factor, low_freq_factor=low,
                                          high_freq_factor=low * spread, trained_length=trained_length)
        # In the blend between the two wavelengths, smooth = (L / wavelength - low) / (high - low) divides float32's
        # rounding in transformers' L / wavelength (about 6e-8 of it, relatively, and it is up to high) by high - low:
        # where the two factors are close, transformers' own error is that much larger than float32's.
        conditioning = low * spread / (low * spread - low)
        errors.append(assert_same(ours, theirs, f"llama3 {parameters} dh={head_dim}",
                                  rtol=RTOL + 4 * 2 ** -24 * conditioning))
        checked.add((head_dim, base, factor, trained_length, low, spread))

    run(search, 400)
    report("llama3_inverse_frequencies", checked, errors)
    assert len(checked) >= 350


def _llama_scores(config, q, k, positions):
    """LLaMA's attention scores with the config's rope scaling: its rotary embedding (cos and sin times its
    attention factor), its apply_rotary_pos_emb, then q . k / sqrt(dh)."""
    rotary = llama.LlamaRotaryEmbedding(config)
    cos, sin = rotary(q, positions[None])  # (1, L, dh) each
    q_turned, k_turned = llama.apply_rotary_pos_emb(q, k, cos, sin)
    return (q_turned.double() @ k_turned.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])


def test_scaled_rope_scores_equal_llamas_attention_with_each_scaling():
    checked = set()
    generator = torch.Generator().manual_seed(26)

    @given(kind=st.sampled_from(["yarn", "llama3", "dynamic", "linear"]), half=st.integers(2, 32),
           factor=st.sampled_from([2.0, 4.0, 8.0, 16.0]), trained_length=st.sampled_from([64, 256, 1024]),
           length=st.integers(1, 24), start=st.sampled_from([0, 100, 2000]))
    def search(kind, half, factor, trained_length, length, start):
        head_dim = 2 * half
        parameters = {"rope_type": kind, "rope_theta": 10000.0, "factor": factor}
        if kind in ("yarn", "llama3"):
            parameters["original_max_position_embeddings"] = trained_length
        if kind == "llama3":
            parameters |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
        config, warned = hf_config(head_dim, trained_length * (2 if kind == "llama3" else 1), parameters)
        assert warned == []
        q = torch.randn(1, 1, length, head_dim, generator=generator)
        k = torch.randn(1, 1, length, head_dim, generator=generator)
        positions = torch.arange(start, start + length)
        theirs = _llama_scores(config, q, k, positions)
        scale = 1.0
        if kind == "yarn":
            frequencies = yarn_inverse_frequencies(head_dim, factor=factor, trained_length=trained_length)
            scale = yarn_attention_scale(factor)
        elif kind == "llama3":
            frequencies = llama3_inverse_frequencies(head_dim, base=10000.0, factor=factor,
                                                     trained_length=trained_length)
        elif kind == "dynamic":  # LLaMA recomputes at the length max(position) + 1
            frequencies = dynamic_ntk_inverse_frequencies(head_dim, length=start + length,
                                                          trained_length=trained_length, factor=factor)
        else:  # position interpolation: every frequency divided by the factor
            frequencies = (10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim) / factor).float()
        ours = scaled_rope_scores(q, k, frequencies, attention_scale=scale, positions_q=positions,
                                  positions_k=positions)
        # LLaMA's angles are float32 products t * theta: an error of a few ulps of t per angle.
        tolerance = 1e-5 + 6 * 2.5e-7 * (start + length) * math.sqrt(head_dim) * scale
        torch.testing.assert_close(ours.double(), theirs, atol=tolerance, rtol=1e-5)
        checked.add((kind, head_dim, factor, trained_length, length, start))

    run(search, 60)
    report("scaled_rope_scores", checked, against=f"LLaMA's attention in transformers {transformers.__version__}")
    assert len(checked) >= 50


def _complex_scores(q, k, positions_q, positions_k, theta, attention_scale, layout):
    """The scores by complex numbers: pair i as x_a + i x_b, turned by multiplying with exp(i t theta_i); the dot
    product of two pairs is Re(z_q * conj(z_k)). ``layout``: "half" pairs (i, i + dh/2), "interleaved" (2i, 2i+1)."""
    def pairs(x):
        wide = x.double()
        a, b = wide.chunk(2, dim=-1) if layout == "half" else (wide[..., 0::2], wide[..., 1::2])
        return torch.complex(a, b)  # (..., L, dh/2)

    def turn(positions):
        return torch.polar(torch.ones((), dtype=torch.float64), positions.double()[:, None] * theta.double())  # (L, dh/2)

    z_q, z_k = pairs(q) * turn(positions_q), pairs(k) * turn(positions_k)
    return attention_scale / math.sqrt(q.shape[-1]) * (z_q @ z_k.conj().transpose(-2, -1)).real


def test_scaled_rope_scores_equal_a_rotation_by_complex_numbers_in_the_rotate_half_layout():
    """And not the interleaved one: the layout is part of the convention (the two differ wherever dh > 2)."""
    checked = set()
    generator = torch.Generator().manual_seed(260)

    @given(half=st.integers(1, 32), length_q=st.integers(1, 12), length_k=st.integers(1, 12),
           start=st.integers(0, 5000), scale=st.sampled_from([1.0, 0.5, 1.296477, 2.0]),
           fractional=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]))
    def search(half, length_q, length_k, start, scale, fractional, dtype):
        head_dim = 2 * half
        theta = torch.rand(half, generator=generator, dtype=torch.float64).pow(3).to(torch.float32)  # (0, 1)
        q = torch.randn(2, 3, length_q, head_dim, generator=generator, dtype=torch.float64).to(dtype)
        k = torch.randn(2, 3, length_k, head_dim, generator=generator, dtype=torch.float64).to(dtype)
        step = 0.25 if fractional else 1
        positions_q = start + step * torch.arange(length_q, dtype=torch.float64)
        positions_k = start + step * torch.arange(length_k, dtype=torch.float64)
        ours = scaled_rope_scores(q, k, theta, attention_scale=scale, positions_q=positions_q, positions_k=positions_k)
        assert ours.dtype == dtype and ours.shape == (2, 3, length_q, length_k)
        expected = _complex_scores(q, k, positions_q, positions_k, theta, scale, "half")
        tolerance = 1e-9 if dtype == torch.float64 else 2e-5 * math.sqrt(head_dim) * max(scale, 1.0)
        torch.testing.assert_close(ours.double(), expected, atol=tolerance, rtol=1e-5)
        checked.add((head_dim, length_q, length_k, start, scale, fractional, dtype))

    run(search, 80)
    report("scaled_rope_scores", checked, against="a rotation by complex numbers")
    assert len(checked) >= 70
    # The same computation in the interleaved layout gives other scores: the check above tells the layouts apart.
    q, k, theta = torch.randn(1, 2, 4, 8, generator=generator), torch.randn(1, 2, 6, 8, generator=generator), \
        torch.tensor([1.0, 0.3, 0.05, 0.002])
    positions_q, positions_k = torch.arange(10, 14), torch.arange(3, 9)
    ours = scaled_rope_scores(q, k, theta, positions_q=positions_q, positions_k=positions_k).double()
    torch.testing.assert_close(ours, _complex_scores(q, k, positions_q, positions_k, theta, 1.0, "half"),
                               atol=1e-5, rtol=1e-5)
    assert (ours - _complex_scores(q, k, positions_q, positions_k, theta, 1.0, "interleaved")).abs().max() > 0.1
