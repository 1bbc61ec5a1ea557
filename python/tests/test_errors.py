"""wirelab.ScenarioError carries the location the engine reports as attributes."""
import pytest

import wirelab
from wirelab.exceptions import ScenarioError


def test_scenario_error_has_file_line_col_key():
    with pytest.raises(wirelab.ScenarioError) as e:
        wirelab.validate({"scenario": {"name": "x", "duration": "1q"}})
    err = e.value
    assert isinstance(err, ValueError) and isinstance(err, wirelab.WirelabError)
    assert (err.file, err.line, err.key) == ("<dict>", 3, "scenario.duration")
    assert err.col >= 1 and "is not a time" in err.reason
    assert str(err).startswith("<dict>:3:") and err.reason in str(err)


def test_scenario_error_without_a_line():
    with pytest.raises(wirelab.ScenarioError) as e:
        wirelab.run("/nonexistent/x.toml")
    assert (e.value.file, e.value.line, e.value.col, e.value.key) == ("/nonexistent/x.toml", None, None, None)
    assert e.value.reason.startswith("cannot read scenario file")
    with pytest.raises(wirelab.ScenarioError) as e:
        wirelab.validate({"scenario": {"name": "x", "duration": "1s"}}, overrides=["link.x.netem=foo"])
    assert e.value.key == "link.x.netem" and e.value.line is None


@pytest.mark.parametrize("msg, parts", [
    ("f.toml:2:1: key `scenario.name`: m: with colons", ("f.toml", 2, 1, "scenario.name", "m: with colons")),
    ("error: a b.toml:12:7: bad", ("a b.toml", 12, 7, None, "bad")),
    ("f.toml: key `app[0].rate`: out of range 1..10", ("f.toml", None, None, "app[0].rate", "out of range 1..10")),
    ("no location at all", (None, None, None, None, "no location at all")),
])
def test_scenario_error_parse(msg, parts):
    e = ScenarioError.parse(msg)
    assert (e.file, e.line, e.col, e.key, e.reason) == parts and str(e) == msg
