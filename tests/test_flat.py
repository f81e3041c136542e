"""graspsim._flat: a nested tuple of arrays and numbers passed to compiled code as three tables and a
FlatSpec is rebuilt there as the same arrays (memory, shape, numba type) and the same numbers."""
import numpy as np
import pytest
from numba import njit, typeof

from graspsim._flat import FlatSpec, flatten, unflatten


@njit(cache=True)
def _fill_and_sum(spec, ints, shapes, floats):
    """Writes through the rebuilt arrays and reads the numbers (nothing rebuilt is returned)."""
    a, (b, x, k, flag, none, (c,)), j = unflatten(spec, ints, shapes, floats)
    a[1] = 7.0
    b[1, 2] = -3
    c[0, 1, 1] = True
    total = a.sum() + b.sum() + x + k + j
    return total, flag, none is None, a.shape[0], b.shape, c.shape


@njit(cache=True)
def _types_of(spec, ints, shapes, floats):
    return unflatten(spec, ints, shapes, floats)


def _tree():
    return (np.arange(5.0), (np.ones((2, 3), np.int64), 1.5, 7, True, None, (np.zeros((2, 2, 2), bool),)), 3)


def test_the_rebuilt_arrays_are_the_same_memory_and_the_numbers_the_same():
    tree = _tree()
    fl = flatten(tree)
    assert fl.args[0].text == "(f1,(i2,F,I,B,N,(b3)),I)"
    total, flag, none, n, bshape, cshape = _fill_and_sum(*fl.args)
    # the kernel's writes are in the caller's arrays
    assert tree[0][1] == 7.0 and tree[1][0][1, 2] == -3 and tree[1][5][0][0, 1, 1]
    assert total == pytest.approx(tree[0].sum() + tree[1][0].sum() + 1.5 + 7 + 3)
    assert flag is True and none and n == 5 and bshape == (2, 3) and cshape == (2, 2, 2)


def test_the_rebuilt_tuple_has_the_tuples_own_numba_type():
    tree = _tree()
    fl = flatten(tree)
    assert typeof(_types_of(*fl.args)) == typeof(tree)
    assert typeof(fl.args[0]).name == f"FlatSpec({fl.args[0].text})"


@pytest.mark.parametrize("leaf", [np.arange(6.0)[::2], np.arange(3, dtype=np.int32), np.float32(1.0),
                                  np.asfortranarray(np.ones((2, 3))), "text", np.zeros(()), 2**70])
def test_what_cannot_be_rebuilt_with_its_own_type_is_refused(leaf):
    """Strided, other dtypes, other number widths, other objects: None (the caller passes the tuple)."""
    ro = np.ones(3)
    ro.flags.writeable = False
    assert flatten((np.ones(2), (leaf,))) is None
    assert flatten((ro,)) is None


def test_a_spec_pickles_by_its_text():
    import pickle
    spec = flatten(_tree()).args[0]
    back = pickle.loads(pickle.dumps(spec))
    assert isinstance(back, FlatSpec) and back.text == spec.text and typeof(back) == typeof(spec)


def test_a_spec_is_typed_by_numbas_dispatcher_in_C_and_two_layouts_stay_apart():
    """A FlatSpec carries ``_numba_type_``: the dispatcher reads it (and its type's code) in C every
    call, without calling back into Python (``typeof_pyval``, ~1.4 us a call); two structures still
    get two compiled versions, each its own."""
    @njit
    def text_len(spec, ints, shapes, floats):
        return len(unflatten(spec, ints, shapes, floats))

    a, b = flatten((np.ones(2), 1.0)), flatten((np.ones(2), 1.0, 2, np.zeros((1, 1))))
    assert text_len(*a.args) == 2 and text_len(*b.args) == 4
    calls = []
    orig = text_len.typeof_pyval
    text_len.typeof_pyval = lambda v: calls.append(v) or orig(v)
    try:
        again = flatten((np.ones(3), 5.0))          # (the same structure as a: a new FlatSpec object)
        assert [text_len(*x.args) for x in (a, b, again)] == [2, 4, 2]
    finally:
        del text_len.typeof_pyval
    assert calls == []
    assert len(text_len.signatures) == 2
