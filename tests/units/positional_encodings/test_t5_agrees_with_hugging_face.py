"""The reference's T5 buckets equal Hugging Face's, bucket for bucket (transformers is installed by .ci/run)."""

import pytest
import torch

from solutions.positional_encodings import t5_relative_position_bucket

T5Attention = pytest.importorskip("transformers.models.t5.modeling_t5").T5Attention


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (64, 256), (16, 32), (8, 20), (10, 50), (7, 9), (128, 1461)])
def test_reference_buckets_equal_hugging_face(bidirectional, num_buckets, max_distance):
    relative = torch.arange(-3000, 3001)
    ours = t5_relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
    theirs = T5Attention._relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
    assert torch.equal(ours, theirs)
