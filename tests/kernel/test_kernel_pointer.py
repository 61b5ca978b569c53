"""JSON Pointer parsing/escaping (RFC 6901) and contract patterns (Pattern.match/covers)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kernel_testkit import kernel_settings, ref_covers, ref_get, ref_parse_pointer, ref_reads

from slateboard.kernel import Pattern, PointerError, format_pointer, parse_pointer
from slateboard.kernel.pointer import escape_token, is_array_index, region_contains

# RFC 6901 section 5 example document and its pointers.
RFC6901_DOC = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}

RFC6901_CASES = [
    ("", (), RFC6901_DOC),
    ("/foo", ("foo",), ["bar", "baz"]),
    ("/foo/0", ("foo", "0"), "bar"),
    ("/", ("",), 0),
    ("/a~1b", ("a/b",), 1),
    ("/c%d", ("c%d",), 2),
    ("/e^f", ("e^f",), 3),
    ("/g|h", ("g|h",), 4),
    ("/i\\j", ("i\\j",), 5),
    ('/k"l', ('k"l',), 6),
    ("/ ", (" ",), 7),
    ("/m~0n", ("m~n",), 8),
]


@pytest.mark.parametrize(("pointer", "tokens", "value"), RFC6901_CASES, ids=[c[0] or "<root>" for c in RFC6901_CASES])
def test_rfc6901_examples_parse_to_tokens_that_resolve(pointer, tokens, value):
    assert parse_pointer(pointer) == tokens
    assert ref_get(RFC6901_DOC, list(tokens)) == value
    assert format_pointer(tokens) == pointer


@pytest.mark.parametrize(
    ("pointer", "tokens"),
    [
        ("/~01", ("~1",)),  # '~01' unescapes to '~1', never to '/'
        ("/~10", ("/0",)),
        ("/~0~1", ("~/",)),
        ("/a//b", ("a", "", "b")),
        ("//", ("", "")),
        ("/-", ("-",)),
        ("/0/-/x", ("0", "-", "x")),
    ],
)
def test_unescape_order_and_empty_segments(pointer, tokens):
    assert parse_pointer(pointer) == tokens


@pytest.mark.parametrize(
    ("pointer", "fragment"),
    [
        ("foo", "must be empty or start with '/'"),
        ("#/foo", "must be empty or start with '/'"),
        ("/a~2b", "invalid escape"),
        ("/a~", "invalid escape"),
        ("/~", "invalid escape"),
        ("/a~x/b", "invalid escape"),
    ],
)
def test_invalid_pointers_raise_pointer_error_naming_the_pointer(pointer, fragment):
    with pytest.raises(PointerError) as info:
        parse_pointer(pointer)
    assert fragment in str(info.value)
    assert repr(pointer) in str(info.value)


@pytest.mark.parametrize("bad", [None, 3, b"/a", ["/a"]])
def test_non_string_pointer_is_a_pointer_error(bad):
    with pytest.raises(PointerError, match="must be a string"):
        parse_pointer(bad)


def test_escape_token():
    assert escape_token("a/b~c") == "a~1b~0c"
    assert escape_token("~1") == "~01"
    assert format_pointer(["a/b", "~", ""]) == "/a~1b/~0/"


@given(st.lists(st.text(alphabet=st.sampled_from("ab~/0-1*é "), max_size=4), max_size=5))
@kernel_settings(200)
def test_format_then_parse_round_trips(tokens):
    pointer = format_pointer(tokens)
    assert parse_pointer(pointer) == tuple(tokens)
    assert ref_parse_pointer(pointer) == tokens


@pytest.mark.parametrize(
    ("token", "ok"),
    [("0", True), ("7", True), ("10", True), ("01", False), ("00", False), ("-1", False), ("-", False),
     ("1e2", False), ("", False), ("١", False), ("+1", False), (" 1", False)],
)  # fmt: skip
def test_is_array_index(token, ok):
    assert is_array_index(token) is ok


# -- patterns ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "appended", "binds"),
    [
        ("/claims/*/status", "/claims/3/status", False, ("3",)),
        ("/claims/*/status", "/claims/3/text", False, None),
        ("/claims/*/status", "/claims/3", False, None),
        ("/claims/*/status", "/claims/3/status/x", False, None),
        ("/*/*", "/a/b", False, ("a", "b")),
        ("/evidence/-", "/evidence/-", False, ("-",)),
        ("/evidence/-", "/evidence/4", False, None),
        ("/evidence/-", "/evidence/4", True, ("4",)),  # an index created by an append
        ("/evidence/*", "/evidence/-", False, ("-",)),
        ("/a/**", "/a", False, ()),
        ("/a/**", "/a/b/c", False, ()),
        ("/a/**", "/b", False, None),
        ("/a/*/**", "/a/x/y", False, ("x",)),
        ("/a/*/**", "/a", False, None),
        ("/**", "", False, ()),
        ("", "", False, ()),
        ("", "/a", False, None),
        ("/a~1b", "/a~1b", False, ()),
        ("/a~1b", "/a/b", False, None),
    ],
)
def test_pattern_match(pattern, path, appended, binds):
    assert Pattern.parse(pattern).match(parse_pointer(path), appended=appended) == binds


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        ("/claims/-", "/claims/-", True),
        ("/claims/-", "/claims/0", False),  # append-only does not cover an index
        ("/claims/*", "/claims/-", True),
        ("/claims/*", "/claims/0", True),
        ("/claims/*", "/claims", False),
        ("/claims/*", "/claims/0/text", False),
        ("/claims/**", "/claims/0/text", True),
        ("/claims/**", "/claimsx", False),
        ("/notes/*", "/notes/a~1b", True),
        ("/count", "/count", True),
        ("/count", "", False),
    ],
)
def test_pattern_covers_matches_reference(pattern, path, covered):
    assert Pattern.parse(pattern).covers(parse_pointer(path)) is covered
    assert ref_covers(pattern, path) is covered


@pytest.mark.parametrize("bad", ["/a/**/b", "/**/x", "a", "/a~2"])
def test_bad_patterns_raise(bad):
    with pytest.raises(PointerError):
        Pattern.parse(bad)


@pytest.mark.parametrize(
    ("pattern", "path", "inside"),
    [
        ("/claims", "/claims", True),
        ("/claims", "/claims/0/text", True),
        ("/claims", "", False),
        ("/claims/*/text", "/claims/2/text", True),
        ("/claims/*/text", "/claims/2", False),
        ("/claims/**", "/claims/2", True),
        ("/**", "", True),
        ("", "/anything", True),
    ],
)
def test_region_contains_is_the_read_region(pattern, path, inside):
    assert region_contains(Pattern.parse(pattern), parse_pointer(path)) is inside
    assert ref_reads(pattern, path) is inside


segment = st.sampled_from(["a", "b", "0", "1", "-", "x/y", "~"])
pat_segment = st.sampled_from(["a", "b", "0", "1", "-", "*", "x/y", "~"])


@given(st.lists(pat_segment, max_size=4), st.booleans(), st.lists(segment, max_size=5))
@kernel_settings(300)
def test_pattern_covers_agrees_with_reference(pat_tokens, deep, path_tokens):
    pattern = format_pointer(pat_tokens) + ("/**" if deep else "")
    path = format_pointer(path_tokens)
    assert Pattern.parse(pattern).covers(parse_pointer(path)) is ref_covers(pattern, path)
