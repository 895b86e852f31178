"""The first unit's code that runs in a job, beside the student's: stand-ins and the timed score paths.

It imports torch and nothing of the grader. The worker runs it in a module of its own before the
student's code; the grader imports the same file to compute what a task should make of a stand-in.
"""

import torch


# Stand-ins for a helper task, so that a task that calls another is graded on its own: the stand-in returns
# valid but scrambled indices (no reference values), and the grader knows what the task should make of them.

def scrambled_relative_positions(length_q, length_k, max_relative_position, *, device=None, key=(3, 5, 1)):
    """Stand-in for clipped_relative_positions: (Lq, Lk) int64 in [0, 2k], not the real table."""
    a, b, c = key
    query = torch.arange(length_q, device=device)[:, None]
    keys = torch.arange(length_k, device=device)[None, :]
    return (keys * a + query * b + c) % (2 * max_relative_position + 1)


def scrambled_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128, *, key=(7, 3, 1)):
    """Stand-in for t5_relative_position_bucket: int64 in [0, num_buckets), depending on every argument.

    max_distance goes in through a hash, not as it is: max_distance itself would count only modulo
    num_buckets (64 and 128 are alike modulo 16), and a t5_bias that does not pass it on would go unseen.
    """
    a, b, c = key
    mixed = int(max_distance) * 2654435761 % 4294967291  # Knuth's multiplier, modulo a prime
    return (relative_position.long() * a + b * int(bool(bidirectional)) + c * mixed) % num_buckets


def relative_positions_on_meta(length_q, length_k, max_relative_position, *, device=None, key=(3, 5, 1)):
    """Stand-in for clipped_relative_positions in shaw_scores' meta case (q, k and rel_k on the meta device): the
    scrambled table, asked for on the inputs' device. An index asked for on the CPU is refused: torch would index
    the meta (or a GPU's) rel_k with it all the same, copying the table there at every call."""
    asked = torch.device("cpu" if device is None else device)
    if asked.type != "meta":
        # No word "meta" in it: the device check would add what an error of the meta device itself means.
        raise RuntimeError(f"clipped_relative_positions was asked for its table on {asked} (device={device}), not "
                           "on the device of q, k and rel_k: pass device=q.device")
    return scrambled_relative_positions(length_q, length_k, max_relative_position, device=device, key=key)


STAND_INS = {"scrambled_relative_positions": scrambled_relative_positions, "scrambled_buckets": scrambled_buckets,
             "relative_positions_on_meta": relative_positions_on_meta}


def timing_inputs(spec, draw):
    """The inputs of a timed path: ``draw(*shape)`` gives a tensor of the spec's dtype on its device, in fresh
    storage, with values of its own for each call (the worker's Draw, from the grader's seed for the call)."""
    batch, heads, length, head_dim = spec["batch"], spec["heads"], spec["length"], spec["head_dim"]
    q, k = draw(batch, heads, length, head_dim), draw(batch, heads, length, head_dim)  # (B, H, L, dh) each
    if spec["path"] == "shaw":
        return q, k, draw(2 * spec["max_relative"] + 1, head_dim)  # rel_k: (2k + 1, dh)
    return q, k, draw(spec["num_buckets"], heads)  # the T5 table: (num_buckets, H)


def score_path(namespace, spec):
    """A function of the inputs that runs the spec's path once, as the code of ``namespace`` wrote it."""
    if spec["path"] == "shaw":
        shaw_scores, max_relative = namespace["shaw_scores"], spec["max_relative"]
        return lambda q, k, rel_k: shaw_scores(q, k, rel_k, max_relative)
    t5_bias, biased_scores = namespace["t5_bias"], namespace["biased_scores"]
    # the lengths of this call's inputs: the grader draws them afresh for each call
    return lambda q, k, table: biased_scores(q, k, t5_bias(q.shape[-2], k.shape[-2], table), scale=1.0)
