"""The turns' order: every side asks first, in the middle and last equally often, so a machine
slowing down over a run weighs on each alike."""
from collections import Counter

from .turns import rotation


def test_each_side_takes_each_place_equally_often_over_whole_rounds():
    names = ["this", "before", "round two"]
    turns = [rotation(names, turn) for turn in range(12)]
    assert all(sorted(order) == sorted(names) for order in turns)
    for place in range(3):
        assert Counter(order[place] for order in turns) == {name: 4 for name in names}


def test_two_sides_alternate_a_b_b_a():
    assert [rotation(["a", "b"], turn) for turn in range(4)] == [["a", "b"], ["b", "a"], ["b", "a"], ["a", "b"]]
