"""torch tensors that DLPack cannot describe as they are: refused with BufferError naming the fix.

torch's C Exchange API (the fast route ``to_java`` takes for torch) exports some of them as plain
memory, which would read wrong values without an error; every route must refuse what
``torch.Tensor.__dlpack__`` refuses, and the negative bit that torch itself forgets.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import dlpack4j

Z = torch.tensor([1 + 2j, 3 - 4j])


def _quantized() -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.zeros(3), 0.1, 0, torch.quint8)


REFUSED = {
    "conjugate": (lambda: Z.conj(), "conjugate bit", "resolve_conj()"),
    "negative": (lambda: Z.conj().imag, "negative bit", "resolve_neg()"),
    "requires_grad": (lambda: torch.zeros(3, requires_grad=True), "requires gradient", "detach()"),
    "sparse": (lambda: torch.zeros(3).to_sparse(), "layout torch.sparse_coo", "to_dense()"),
    "quantized": (_quantized, "quantized", "dequantize()"),
    "bit_dtype": (lambda: torch.empty(2, dtype=torch.bits8), "dtype torch.bits8", "view(torch.uint8)"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_to_java_refuses_through_the_exchange_api_naming_the_reason_and_the_fix(java, case):
    make, reason, fix = REFUSED[case]
    with pytest.raises(BufferError, match=reason) as info:
        dlpack4j.to_java(make())
    assert fix in str(info.value)


@pytest.mark.parametrize("case", sorted(set(REFUSED) - {"negative"}))
def test_to_java_with_a_copy_refuses_through_dunder_dlpack_naming_the_fix_too(java, case):
    make, reason, fix = REFUSED[case]
    with pytest.raises(BufferError, match=reason) as info:
        dlpack4j.to_java(make(), copy=True)
    assert fix in str(info.value)


def test_a_java_method_taking_a_tensor_refuses_a_conjugated_argument(java):
    with pytest.raises(BufferError, match="resolve_conj"):
        java.Reductions.sumAndClose(Z.conj())


def test_a_copy_of_a_negative_view_reaches_java_with_its_true_values(java):
    n = Z.conj().imag
    with dlpack4j.to_java(n, copy=True) as t:
        np.testing.assert_array_equal(np.from_dlpack(t), [-2.0, 4.0])


def test_the_fixes_the_messages_name_give_java_the_true_values(java):
    with dlpack4j.to_java(Z.conj().resolve_conj()) as t:
        np.testing.assert_array_equal(np.from_dlpack(t), [1 - 2j, 3 + 4j])
    with dlpack4j.to_java(torch.zeros(3, requires_grad=True).detach()) as t:
        assert list(t.shape()) == [3]
