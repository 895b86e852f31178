"""The reference's RoPE equals LLaMA's and its ALiBi equals BLOOM's, in Hugging Face transformers (no weights: configs only).

LLaMA computes its angles in float32 and the reference in float64, so the two agree to float32 rounding of
``t * theta``, an error that grows with the position ``t``; BLOOM's slopes agree bit for bit.
"""

import pytest
import torch

from solutions.rotary_alibi import alibi_bias, alibi_slopes, apply_rotary, rope_scores

llama = pytest.importorskip("transformers.models.llama.modeling_llama")
bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig


def llama_rotary(head_dim, num_heads, theta):
    config = LlamaConfig(
        hidden_size=head_dim * num_heads, num_attention_heads=num_heads, num_key_value_heads=num_heads,
        intermediate_size=32, num_hidden_layers=1, vocab_size=16, max_position_embeddings=8192,
        rope_parameters={"rope_type": "default", "rope_theta": theta},
    )
    return llama.LlamaRotaryEmbedding(config)


def llama_tolerance(largest_position):
    # float32 angles: t * theta is off by about 2 ulps of t, times |x| (drawn from N(0, 1), so below 6).
    return 1e-5 + 6 * 2.5e-7 * largest_position


@pytest.mark.parametrize("start", [0, 100, 2000])
@pytest.mark.parametrize("head_dim, theta", [(16, 10000.0), (64, 10000.0), (8, 500000.0)])
def test_apply_rotary_half_layout_equals_llama(start, head_dim, theta):
    batch, heads, length = 2, 3, 7
    generator = torch.Generator().manual_seed(start + head_dim)
    q = torch.randn(batch, heads, length, head_dim, generator=generator)
    k = torch.randn(batch, heads, length, head_dim, generator=generator)
    positions = torch.arange(start, start + length)  # (L,)
    cos, sin = llama_rotary(head_dim, heads, theta)(q, positions[None].expand(batch, length))  # (B, L, dh)
    q_theirs, k_theirs = llama.apply_rotary_pos_emb(q, k, cos, sin)
    tolerance = llama_tolerance(start + length)
    torch.testing.assert_close(apply_rotary(q, positions, theta, interleaved=False), q_theirs, atol=tolerance, rtol=0)
    torch.testing.assert_close(apply_rotary(k, positions, theta, interleaved=False), k_theirs, atol=tolerance, rtol=0)


def test_apply_rotary_takes_llamas_per_sequence_positions():
    # LLaMA's position_ids are (B, L): each sequence of a batch may sit at its own offset.
    batch, heads, length, head_dim = 3, 2, 5, 16
    q = torch.randn(batch, heads, length, head_dim)
    position_ids = torch.arange(length)[None] + torch.tensor([[0], [7], [40]])  # (B, L)
    cos, sin = llama_rotary(head_dim, heads, 10000.0)(q, position_ids)
    q_theirs, _ = llama.apply_rotary_pos_emb(q, q, cos, sin)
    ours = apply_rotary(q, position_ids[:, None, :], interleaved=False)  # positions (B, 1, L)
    torch.testing.assert_close(ours, q_theirs, atol=llama_tolerance(50), rtol=0)


def test_rope_scores_equal_llamas_rotated_dot_products():
    batch, heads, length_q, length_k, head_dim = 1, 4, 3, 9, 32
    q = torch.randn(batch, heads, length_q, head_dim)
    k = torch.randn(batch, heads, length_k, head_dim)
    rotary = llama_rotary(head_dim, heads, 10000.0)
    # Decoding with a cache: LLaMA gives the queries the last Lq positions; rope_scores is told so.
    positions_q, positions_k = torch.arange(length_k - length_q, length_k), torch.arange(length_k)
    q_theirs, _ = llama.apply_rotary_pos_emb(q, q, *rotary(q, positions_q[None]))
    _, k_theirs = llama.apply_rotary_pos_emb(k, k, *rotary(k, positions_k[None]))
    theirs = q_theirs @ k_theirs.transpose(-2, -1) / head_dim**0.5  # (B, H, Lq, Lk)
    ours = rope_scores(q, k, positions_q=positions_q, positions_k=positions_k, interleaved=False)
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-5)


def bloom_alibi(num_heads, length):
    """BLOOM's (H, L) bias for one unpadded sequence: ``slope_h * j`` for key j."""
    mask = torch.ones(1, length, dtype=torch.long)  # (B=1, L): no padding
    return bloom.build_alibi_tensor(mask, num_heads, torch.float32).reshape(num_heads, length)  # (H, L)


@pytest.mark.parametrize("num_heads", range(1, 65))
def test_alibi_slopes_equal_blooms_bit_for_bit(num_heads):
    theirs = bloom_alibi(num_heads, 2)[:, 1]  # slope_h * 1: the slopes themselves, exactly
    ours = alibi_slopes(num_heads)
    assert ours.dtype == torch.float32 and ours.shape == (num_heads,)
    differ = (ours != theirs).nonzero().flatten().tolist()
    assert differ == [], f"heads {differ}: ours {ours[differ].tolist()}, BLOOM's {theirs[differ].tolist()}"


@pytest.mark.parametrize("num_heads", [1, 5, 8, 12, 16, 24, 33])
def test_alibi_bias_differs_from_blooms_by_a_constant_per_row(num_heads):
    length = 11
    slopes = alibi_slopes(num_heads)
    ours = alibi_bias(length, length, slopes, causal=True)[0]  # (H, L, L)
    theirs = bloom_alibi(num_heads, length)[:, None, :].expand(num_heads, length, length)  # (H, L, L)
    past = torch.ones(length, length, dtype=torch.bool).tril()  # j <= i
    row = torch.arange(length, dtype=torch.float32)[None, :, None]  # (1, L, 1): query i
    shift = slopes[:, None, None] * row  # (H, L, 1): slope_h * i
    torch.testing.assert_close((theirs - ours)[:, past], shift.expand(-1, -1, length)[:, past], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("num_heads", [4, 6, 32])
def test_alibi_bias_gives_blooms_attention_under_a_causal_mask(num_heads):
    length = 13
    scores = torch.randn(2, num_heads, length, length, dtype=torch.float64)
    slopes = alibi_slopes(num_heads)
    future = torch.ones(length, length, dtype=torch.bool).triu(1)  # j > i

    def attention(bias):
        return (scores + bias.double()).masked_fill(future, float("-inf")).softmax(-1)

    ours = attention(alibi_bias(length, length, slopes, causal=True))  # (1, H, L, L) bias
    theirs = attention(bloom_alibi(num_heads, length)[None, :, None, :])  # (1, H, 1, L) bias
    # Both biases are float32 products, each rounded its own way: float32 agreement, not float64's.
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-6)
