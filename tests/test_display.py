"""Jupyter display: the HTML of a turn's context, search results, entity profiles and stats.

No screenshots: the HTML is parsed with the standard library's parser and the sections,
numbers and escaping a notebook reader relies on are looked up in it.
"""

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import MemoryConfig, TieredMemory
from langchain_tiered_memory import MemoryStats, SearchResults
from langchain_tiered_memory.display import MESSAGE_CHARS

sys.path.insert(0, str(Path(__file__).parent))
from scripted_model import ScriptedChatModel, entity, turn_tool_call, wrong_types_tool_call  # noqa: E402

SCRIPT = '<script>alert("pwned")</script>'
IMG = "<img src=x onerror=alert(1)>"


class Node:
    def __init__(self, tag, attrs, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def matches(self, tag, attrs):
        if tag is not None and self.tag != tag:
            return False
        for key, value in attrs.items():
            if key == "class_":
                if value not in (self.attrs.get("class") or "").split():
                    return False
            elif self.attrs.get(key) != value:
                return False
        return True

    def find_all(self, tag=None, **attrs):
        """Descendants matching ``tag`` and ``attrs`` (``class_`` matches one class), in order."""
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if c.matches(tag, attrs):
                    out.append(c)
                out += c.find_all(tag, **attrs)
        return out

    def find(self, tag=None, **attrs):
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag} {attrs}> in the HTML"
        return found[0]


class Tree(HTMLParser):
    VOID = {"br", "img", "hr", "meta", "input"}

    def __init__(self, markup):
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {})
        self.cur = self.root
        self.tags = set()
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in self.VOID:
            self.cur = node

    def handle_endtag(self, tag):
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent
        assert node is not self.root, f"</{tag}> closes nothing"
        self.cur = node.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(markup):
    tree = Tree(markup)
    assert tree.cur is tree.root, "an element is left open"
    # Stored text is untrusted: nothing in it may become markup or script.
    assert not tree.tags & {"script", "img", "style", "iframe"}, tree.tags
    return tree.root


def rows(table):
    return [[td.text() for td in tr.find_all() if td.tag in ("td", "th")] for tr in table.find_all("tr")]


def number(text):
    return int(text.replace(",", ""))


def config(**overrides):
    base = dict(max_tokens=600, system_reserve=60, output_reserve=60, job_mode="inline",
                job_backoff_seconds=0.0, job_max_attempts=2)
    return MemoryConfig(**{**base, **overrides})


# --- the context of a turn ------------------------------------------------------------------


def test_context_shows_each_section_with_its_tokens_the_budget_and_the_window(data_dir):
    long_text = "I keep a list of places. " + " ".join(f"place{i}" for i in range(120)) + " THE END"
    with TieredMemory(data_dir, config()) as m:
        m.after_turn("u", "t", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea."),
                                AIMessage("Nice to meet you, Alice.")])
        for i in range(6):
            m.after_turn("u", "t", [HumanMessage(f"Turn {i}: tell me about trains in Europe."),
                                    AIMessage(f"Answer {i} about trains.")])
        m.after_turn("u", "t", [HumanMessage(f"{SCRIPT} {long_text}"), AIMessage("Noted.")])
        ctx = m.before_turn("u", "t", query="Where does Alice live?")
        doc = parse(ctx._repr_html_())

        usage = ctx.token_usage
        table = rows(doc.find("table", class_="ltm-sections"))
        assert table[0] == ["section", "tokens", "of budget"]
        shown = {r[0].lstrip("■ ").strip(): number(r[1]) for r in table[1:]}
        assert shown.pop("total") == usage.total
        assert shown.pop("budget") == usage.budget == 540
        assert shown == dict(usage)
        # This turn has memory sections and a window, and the table says what they cost.
        assert {"entities", "memories", "window"} <= set(shown)
        assert shown["window"] > 0 and ctx.evicted > 0

        line = doc.find("div", class_="ltm-budget").text()
        assert f"{usage.total:,} / {usage.budget:,} tokens ({100 * usage.total / usage.budget:.1f}%)" in line
        assert f"{usage.remaining:,} left" in line
        assert f"{ctx.evicted:,} earlier messages outside the window" in line

        bar = doc.find("div", class_="ltm-budget-bar")
        segments = [d for d in bar.find_all("div")]
        assert [s.attrs["title"] for s in segments] == [
            f"{k}: {v:,} tokens" for k, v in usage.items() if v > 0
        ]
        widths = [float(re.search(r"width:([\d.]+)%", s.attrs["style"]).group(1)) for s in segments]
        assert sum(widths) == pytest.approx(100 * usage.total / usage.budget, abs=0.01)

        for section in ctx.sections:
            details = doc.find("details", **{"data-section": section.name})
            assert f"{section.tokens:,} tokens" in details.find("summary").text()
            assert details.find("pre").text() == section.text
        assert any("Alice" in s.text for s in ctx.sections)

        window = rows(doc.find("table", class_="ltm-window"))
        assert window[0] == ["#", "role", "tokens", "text"]
        assert len(window) - 1 == len(ctx.window)
        for (n, role, tokens, text), message in zip(window[1:], ctx.window):
            assert role == message.type
            assert number(tokens) == m.admin.counter.count_message(message)
            assert text == message.text if len(message.text) <= MESSAGE_CHARS else text != message.text
        assert sum(number(r[2]) for r in window[1:]) == usage["window"]
        # The long message is cut, keeping its beginning and its end; the markup is text.
        long_row = next(r for r in window[1:] if "place1 " in r[3])
        assert long_row[3].startswith(SCRIPT) and long_row[3].endswith("THE END")
        assert len(long_row[3]) < len(SCRIPT) + len(long_text)
        assert re.search(r"\[…[\d,]+ characters…\]", long_row[3])


def test_an_empty_thread_renders_an_empty_window(data_dir):
    with TieredMemory(data_dir, config()) as m:
        ctx = m.before_turn("u", "new-thread")
        doc = parse(ctx._repr_html_())
        assert doc.find("div", class_="ltm-window").text() == "The window is empty."
        assert f"{ctx.token_usage.total:,} / 540 tokens" in doc.find("div", class_="ltm-budget").text()
        assert "0 messages to send" in doc.text()


def test_user_and_thread_ids_are_escaped(data_dir):
    with TieredMemory(data_dir, config()) as m:
        m.after_turn("<b>u</b>", '"t"<i>', [HumanMessage("hi")])
        ctx = m.before_turn("<b>u</b>", '"t"<i>')
        doc = parse(ctx._repr_html_())
        codes = [c.text() for c in doc.find_all("code")]
        assert codes[:2] == ["<b>u</b>", '"t"<i>']
        assert not {"i"} & {n.tag for n in doc.find_all("code")[1].find_all()}


# --- search results -------------------------------------------------------------------------


@pytest.fixture
def recalled(data_dir):
    with TieredMemory(data_dir, config()) as m:
        m.memories.remember("u", "The user prefers green tea in the morning.", "preference", 0.9)
        m.memories.remember("u", f"The user's tea shop is called {IMG}.", "fact", 0.6)
        m.memories.remember("u", "The user runs on Sundays.", "experience", 0.4)
        yield m


def test_search_results_list_content_type_importance_score_and_score_parts(recalled):
    hits = recalled.memories.search("u", "What tea does the user like?", k=5, explain=True)
    assert isinstance(hits, SearchResults) and isinstance(hits, list)
    assert hits == list(hits) and list(hits) == hits and len(hits) >= 2
    doc = parse(hits._repr_html_())
    heading = doc.find("div", class_="ltm-search").find("b").text()
    assert heading == f"{len(hits)} memories"
    assert "What tea does the user like?" in doc.find("i").text()
    table = rows(doc.find("table"))
    assert table[0] == ["#", "content", "type", "importance", "score", "relevance", "cosine", "BM25",
                        "importance", "boost", "days since access", "decay", "prior", "recalls", "id"]
    assert len(table) - 1 == len(hits)

    def number(value):
        return "–" if value is None else f"{value:.3f}"

    for row, hit in zip(table[1:], hits):
        parts = hit.parts
        assert row[1] == hit.entry.content  # the <img> comes back as text, not as an image
        assert row[2] == hit.entry.memory_type
        assert row[3:13] == [number(v) for v in (
            hit.entry.importance, hit.score, parts.relevance, parts.dense, parts.sparse, parts.importance,
            parts.boost, parts.days_since_access, parts.decay, parts.effective_importance)]
        assert row[13] == str(hit.entry.access_count) == "1"
        assert hit.entry.id.startswith(row[14])
    assert any(IMG in row[1] for row in table[1:])
    # Ranked best first, as the score column shows.
    scores = [float(r[4]) for r in table[1:]]
    assert scores == sorted(scores, reverse=True)


def test_search_results_without_explain_have_no_score_parts(recalled):
    hits = recalled.memories.search("u", "green tea")
    table = rows(parse(hits._repr_html_()).find("table"))
    assert table[0] == ["#", "content", "type", "importance", "score", "recalls", "id"]
    assert table[1][1] == hits[0].entry.content and table[1][4] == f"{hits[0].score:.3f}"
    one = rows(parse(hits[0]._repr_html_()).find("table"))
    assert one == [table[0], table[1]]


def test_no_match_says_so(recalled):
    hits = recalled.memories.search("nobody", "tea")
    assert hits == []
    doc = parse(hits._repr_html_())
    assert doc.text() == "0 memories for teaNothing matched."


# --- entities -------------------------------------------------------------------------------


def test_entity_shows_its_attributes_with_their_history(data_dir):
    with TieredMemory(data_dir, config()) as m:  # offline extractor: English rules
        m.after_turn("u", "t1", [HumanMessage("My name is Alice, I live in Paris and I prefer green tea.")])
        m.after_turn("u", "t2", [HumanMessage("I moved to Berlin.")])
        alice = m.entities.get("u", "alice")
        doc = parse(alice._repr_html_())
    head = doc.find("div", class_="ltm-entity")
    assert head.find("b").text() == "Alice" and "(person)" in head.find("span").text()
    table = rows(doc.find("table"))
    assert table[0] == ["attribute", "value", "learned", "superseded", "thread"]
    location = [r for r in table[1:] if r[0] == "location"]
    assert [(r[1], r[3] == "current", r[4]) for r in location] == [
        ("Berlin", True, "t2"), ("Paris", False, "t1")
    ]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", location[1][3])  # when it was superseded
    assert ["prefers", "green tea"] == [r[:2] for r in table[1:] if r[0] == "prefers"][0]
    # The current value is bold, the superseded one struck through.
    assert [b.text() for b in doc.find_all("b")][1:] == [r[1] for r in table[1:] if r[3] == "current"]
    assert {r[0]: r[1] for r in table[1:] if r[3] == "current"} == alice.attributes
    assert [s.text() for s in doc.find_all("s")] == ["Paris"]


def test_entity_names_and_values_from_the_model_are_escaped(data_dir):
    model = ScriptedChatModel(script=[], default=turn_tool_call(
        entities=[entity(IMG, "person", note=SCRIPT)]))
    with TieredMemory(data_dir, config(), model=model) as m:
        m.after_turn("u", "t", [HumanMessage("hello")])
        [profile] = m.entities.list("u")
        doc = parse(profile._repr_html_())
    assert doc.find("div", class_="ltm-entity").find("b").text() == IMG
    assert [r[:2] for r in rows(doc.find("table"))[1:]] == [["note", SCRIPT]]


# --- stats ----------------------------------------------------------------------------------


def test_stats_show_counts_disk_size_jobs_and_failed_jobs_with_their_reasons(data_dir):
    model = ScriptedChatModel(script=[], default=wrong_types_tool_call())
    with TieredMemory(data_dir, config(), model=model) as m:
        m.after_turn("u", "t", [HumanMessage(f"first {SCRIPT}"), AIMessage("ok")])
        m.after_turn("v", "t2", [HumanMessage("second")])
        assert m.flush(timeout=30)
        stats = m.admin.stats()
    # A plain dict for everything else: equal to one, JSON round-trips.
    assert isinstance(stats, MemoryStats) and isinstance(stats, dict)
    assert json.loads(json.dumps(stats)) == stats == dict(stats)
    assert stats["jobs"]["failed"] == 2

    doc = parse(stats._repr_html_())
    table = dict(rows(doc.find("table"))[:len(stats)])
    assert number(table["users"]) == stats["users"] == 2
    assert number(table["threads"]) == stats["threads"] == 2
    assert number(table["messages"]) == stats["messages"] == 3
    size = stats["db_bytes"]
    assert table["db_bytes"] == f"{size / 1024:.1f} KiB ({size:,} bytes)"
    assert table["jobs"] == " · ".join(f"{k} {v}" for k, v in stats["jobs"].items())
    assert table["data_dir"] == stats["data_dir"]

    failed = doc.find("div", **{"data-list": "failed_jobs"})
    assert failed.text() == "failed_jobs (2)"
    failed_rows = rows(doc.find_all("table")[1])
    assert failed_rows[0] == ["key", "attempts", "reason", "at"]
    reasons = {r[2] for r in failed_rows[1:]}
    assert reasons == {j["reason"] for j in stats["failed_jobs"]}
    assert all("ExtractionError" in r for r in reasons)
    assert {r[1] for r in failed_rows[1:]} == {"2"}


def test_stats_without_failures_say_none(memory):
    memory.after_turn("u", "t", [HumanMessage("hi")])
    doc = parse(memory.admin.stats()._repr_html_())
    assert doc.find("div", **{"data-list": "failed_jobs"}).text() == "failed_jobs: none"
