"""The third unit's sample class, for `python -m autograder demo --unit long_context`: each submission is the
reference with one line changed, a mistake students make, which must lose points in its own task only and be named
in the feedback. `check-unit` grades each.
"""

from autograder.core.rubric import SampleMistake

MISTAKES = (
    SampleMistake("ntk_wrong_power", "ntk_inverse_frequencies", "factor ** ((dh - 2) / dh)",
                  "scaled_base = base * factor ** (head_dim / (head_dim - 2))",
                  "scaled_base = base * factor ** ((head_dim - 2) / head_dim)"),
    SampleMistake("dynamic_scaled_when_short", "dynamic_ntk_inverse_frequencies", "applied at every length",
                  "grown = max(1.0, factor * length / trained_length - (factor - 1))",
                  "grown = factor * length / trained_length - (factor - 1)"),
    SampleMistake("yarn_bounds_swapped", "yarn_inverse_frequencies", "bounds are swapped",
                  "low, high = pair_turning(beta_fast), pair_turning(beta_slow)",
                  "low, high = pair_turning(beta_slow), pair_turning(beta_fast)"),
    SampleMistake("yarn_scale_not_squared", "yarn_attention_scale", "sqrt(1/t)",
                  "return root * root", "return root"),
    SampleMistake("llama3_thresholds_inverted", "llama3_inverse_frequencies", "thresholds are inverted",
                  "smooth = (trained_length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)",
                  "low_freq_factor, high_freq_factor = high_freq_factor, low_freq_factor\n"
                  "    smooth = (trained_length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)"),
    SampleMistake("scores_scale_on_q_and_k", "scaled_rope_scores", "multiplies q and k each",
                  "return (q_turned * (attention_scale / math.sqrt(head_dim))) @ k_turned.transpose(-2, -1)",
                  "return (q_turned * attention_scale / math.sqrt(head_dim)) @ (k_turned * attention_scale)"
                  ".transpose(-2, -1)"),
)
