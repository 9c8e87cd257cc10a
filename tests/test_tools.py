"""create_memory_tools (remember / recall / forget) and LangMem's tools over memory.store."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import agent_scenario as scenario
from langchain_tiered_memory import ConfigError, TieredMemory, post_model_hook, pre_model_hook
from langchain_tiered_memory.integrations.tools import create_memory_tools
from scripted_model import ScriptedChatModel

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def call(name: str, **args) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{name}", "type": "tool_call"}])


def agent(memory: TieredMemory, model, tools, *, hooks: bool = True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(
            model,
            tools,
            pre_model_hook=pre_model_hook(memory) if hooks else None,
            post_model_hook=post_model_hook(memory) if hooks else None,
        )


def last_tool_text(messages) -> str:
    return [m for m in messages if isinstance(m, ToolMessage)][-1].text


def test_an_agent_remembers_recalls_and_forgets(data_dir):
    def forget_what_was_recalled(messages):
        return call("forget", memory_id=UUID.search(messages[-1].text).group(0))

    model = ScriptedChatModel(
        script=[
            call("remember", content="The user's sister lives in Porto.", memory_type="fact", importance=0.9),
            "Saved.",
            call("recall", query="where does my sister live", k=3),
            forget_what_was_recalled,
            "Forgotten.",
        ]
    )
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        graph = agent(memory, model, create_memory_tools(memory))
        state = graph.invoke({"messages": [HumanMessage("Please note something.")]}, scenario.config("t1"))
        stored = UUID.search(last_tool_text(state["messages"])).group(0)
        entry = memory.memories.get("alice", stored)
        assert (entry.content, entry.memory_type, entry.session_id) == ("The user's sister lives in Porto.", "fact", "t1")
        assert entry.importance >= 0.9  # 0.9, plus the boost of being recalled into the next input

        state = graph.invoke({"messages": [HumanMessage("Where does she live, and then drop it.")]}, scenario.config("t1"))
        recalled = [m for m in state["messages"] if isinstance(m, ToolMessage)][-2].text
        assert stored in recalled and "Porto" in recalled
        assert re.search(r"score [01]\.\d\d", recalled)
        assert last_tool_text(state["messages"]) == f"Forgot memory {stored}."
        assert memory.memories.list("alice") == []


def test_tools_act_only_for_the_user_of_the_run(data_dir):
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        tools = {t.name: t for t in create_memory_tools(memory)}
        assert all("user_id" not in t.args for t in tools.values())
        alice = scenario.config("t1")
        bob = {"configurable": {"user_id": "bob", "thread_id": "b1"}}
        # A user_id slipped into the arguments by the model is not a parameter: ignored.
        answer = tools["remember"].invoke({"content": "The user's PIN hint is 'blue door'.", "user_id": "bob"}, alice)
        alices = UUID.search(answer).group(0)
        assert memory.memories.get("alice", alices).user_id == "alice"
        assert memory.memories.list("bob") == []

        assert tools["recall"].invoke({"query": "PIN hint blue door"}, bob) == "No memory matches 'PIN hint blue door'."
        refused = tools["forget"].invoke({"memory_id": alices}, bob)
        assert "nothing was deleted" in refused
        assert memory.memories.get("alice", alices).content == "The user's PIN hint is 'blue door'."
        assert alices in tools["recall"].invoke({"query": "PIN hint blue door"}, alice)

        with pytest.raises(ConfigError, match="user_id missing"):
            tools["recall"].invoke({"query": "anything"}, {"configurable": {"thread_id": "t1"}})


def test_a_bad_call_is_answered_so_the_model_can_fix_it(data_dir):
    model = ScriptedChatModel(
        script=[
            call("remember", content="The user runs marathons.", importance=7),
            call("remember", content="   "),
            call("remember", content="The user runs marathons.", importance=0.7),
            "Done.",
        ]
    )
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        graph = agent(memory, model, create_memory_tools(memory), hooks=False)
        state = graph.invoke({"messages": [HumanMessage("I run marathons.")]}, scenario.config("t1"))
        answers = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        assert [m.status for m in answers] == ["error", "error", "success"]
        assert "importance" in answers[0].text and "less than or equal to 1" in answers[0].text
        assert answers[1].text.startswith("Nothing was stored: content is empty")
        assert [e.content for e in memory.memories.list("alice")] == ["The user runs marathons."]


def test_a_run_without_user_id_fails_loudly(data_dir):
    model = ScriptedChatModel(script=[call("recall", query="anything")])
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        graph = agent(memory, model, create_memory_tools(memory), hooks=False)
        with pytest.raises(ConfigError, match=r'config=\{"configurable": \{"user_id": \.\.\.'):
            graph.invoke({"messages": [HumanMessage("hi")]})


def test_langmem_tools_work_on_memory_store(data_dir):
    langmem = pytest.importorskip("langmem")
    namespace = ("memories", "{user_id}")

    def delete_created(messages):
        return call("manage_memory", action="delete", id=UUID.search(messages[-1].text).group(0))

    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="The user's favourite colour is teal.", action="create"),
            "Noted.",
            call("search_memory", query="favourite colour"),
            "Teal.",
            "Answer in thread 2.",  # thread 2: the memory block holds the LangMem memory
            call("search_memory", query="favourite colour"),  # bob
            "Nothing found.",
        ]
    )
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        tools = [
            langmem.create_manage_memory_tool(namespace=namespace, store=memory.store),
            langmem.create_search_memory_tool(namespace=namespace, store=memory.store),
        ]
        graph = agent(memory, model, tools)
        state = graph.invoke({"messages": [HumanMessage("Teal is my colour.")]}, scenario.config("t1"))
        created = UUID.search(last_tool_text(state["messages"])).group(0)
        assert last_tool_text(state["messages"]) == f"created memory {created}"
        assert [h.entry.id for h in memory.memories.search("alice", "favourite colour", k=1)] == [created]

        state = graph.invoke({"messages": [HumanMessage("What is my favourite colour?")]}, scenario.config("t1"))
        found = last_tool_text(state["messages"])
        assert created in found and "teal" in found

        graph.invoke({"messages": [HumanMessage("Which colour suits my new room?")]}, scenario.config("t2"))
        assert "The user's favourite colour is teal." in scenario.text_of(model.inputs[-1])

        bob = {"configurable": {"user_id": "bob", "thread_id": "b1"}}
        state = graph.invoke({"messages": [HumanMessage("What is my favourite colour?")]}, bob)
        assert last_tool_text(state["messages"]) == "[]"

        manage = tools[0]
        assert manage.invoke({"action": "delete", "id": created}, scenario.config("t1")) == f"Deleted memory {created}"
        assert memory.memories.list("alice") == []


# --- style="langmem": LangMem's tools, with their names, schemas and answers ------------------


def _langmems_own(store=None):
    langmem = pytest.importorskip("langmem")
    namespace = ("memories", "{langgraph_user_id}")
    return [
        langmem.create_manage_memory_tool(namespace=namespace, store=store),
        langmem.create_search_memory_tool(namespace=namespace, store=store),
    ]


def _call_schema(tool) -> dict:
    schema = tool.tool_call_schema.model_json_schema()
    schema.pop("description")
    return schema


def test_langmem_style_tools_have_langmems_names_and_argument_schemas(data_dir):
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        ours = create_memory_tools(memory, style="langmem")
        theirs = _langmems_own()
        assert [t.name for t in ours] == [t.name for t in theirs] == ["manage_memory", "search_memory"]
        for mine, langmems in zip(ours, theirs, strict=True):
            assert mine.args == langmems.args
            assert _call_schema(mine) == _call_schema(langmems)  # what the model is shown
            assert mine.response_format == langmems.response_format == "content"
        assert ours[0].args["action"]["enum"] == ["create", "update", "delete"]
        assert "MEMORY ID" in ours[0].description
        with pytest.raises(Exception, match="unknown tool style"):
            create_memory_tools(memory, style="letta")


def test_a_langmem_agent_moves_over_unchanged(data_dir):
    # The script a LangMem agent's model plays, against our tools and a real memory; the
    # config is LangMem's (langgraph_user_id), the graph has no store compiled in.
    def update_created(messages):
        return call("manage_memory", action="update", id=UUID.search(messages[-1].text).group(0),
                    content="The user's favourite colour is navy.")

    model = ScriptedChatModel(
        script=[
            call("manage_memory", content="The user's favourite colour is teal.", action="create"),
            call("search_memory", query="favourite colour", limit=3),
            update_created,
            "Noted.",
        ]
    )
    langmem_config = {"configurable": {"langgraph_user_id": "alice", "thread_id": "t1"}}
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        graph = agent(memory, model, create_memory_tools(memory, style="langmem"), hooks=False)
        state = graph.invoke({"messages": [HumanMessage("Teal is my colour. No, navy.")]}, langmem_config)
        created, found, updated = [m.text for m in state["messages"] if isinstance(m, ToolMessage)]
        memory_id = UUID.search(created).group(0)
        assert created == f"created memory {memory_id}"
        (hit,) = json.loads(found)
        assert hit["namespace"] == ["memories", "alice"] and hit["key"] == memory_id
        assert hit["value"] == {"content": "The user's favourite colour is teal."}
        assert isinstance(hit["score"], float) and {"created_at", "updated_at"} <= set(hit)
        assert updated == f"updated memory {memory_id}"
        assert memory.memories.get("alice", memory_id).content == "The user's favourite colour is navy."
        assert [h.entry.id for h in memory.memories.search("alice", "favourite colour", k=1)] == [memory_id]


def test_langmem_style_tools_answer_as_langmems_do_on_the_same_store(data_dir):
    alice = {"configurable": {"langgraph_user_id": "alice"}}
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        manage, search = create_memory_tools(memory, style="langmem")
        their_manage, their_search = _langmems_own(store=memory.store)
        mine = manage.invoke({"content": "The user cycles to work."}, alice)
        theirs = their_manage.invoke({"content": "The user takes the train on Fridays."}, alice)
        for answer in (mine, theirs):
            assert re.fullmatch(r"created memory " + UUID.pattern, answer)
        # The same items, in the same JSON, whoever lists them.
        listing = {"query": "", "filter": {"content": "The user cycles to work."}}
        assert search.invoke(listing, alice) == their_search.invoke(listing, alice)
        assert len(json.loads(search.invoke({"query": ""}, alice))) == 2
        assert json.loads(search.invoke({"query": "", "limit": 1, "offset": 1}, alice)) == json.loads(
            their_search.invoke({"query": "", "limit": 1, "offset": 1}, alice)
        )
        ours = json.loads(search.invoke({"query": "how does the user commute?"}, alice))
        assert {h["key"] for h in ours} == {UUID.search(mine).group(0), UUID.search(theirs).group(0)}
        deleted = UUID.search(theirs).group(0)
        assert manage.invoke({"action": "delete", "id": deleted}, alice) == f"Deleted memory {deleted}"
        assert [e.content for e in memory.memories.list("alice")] == ["The user cycles to work."]


async def test_langmem_style_tools_keep_users_apart_and_answer_mistakes(data_dir):
    with TieredMemory(data_dir, scenario.CONFIG) as memory:
        manage, search = create_memory_tools(memory, style="langmem")
        alice, bob = scenario.config("t1"), {"configurable": {"user_id": "bob"}}
        answer = await manage.ainvoke({"content": "The user's PIN hint is 'blue door'."}, alice)
        alices = UUID.search(answer).group(0)
        assert json.loads(await search.ainvoke({"query": "PIN hint"}, bob)) == []
        # Another user's id is not theirs to change: answered, and nothing happens.
        for action in ("update", "delete"):
            refused = await manage.ainvoke({"action": action, "id": alices, "content": "x"}, bob)
            assert f"There is no memory {alices}; nothing was {action}d" in refused
        assert memory.memories.get("alice", alices).content == "The user's PIN hint is 'blue door'."
        assert memory.memories.list("bob") == []
        # Mistakes a model can fix come back as the tool's answer.
        assert "cannot provide a MEMORY ID when creating" in manage.invoke({"content": "x", "id": alices}, alice)
        assert "must provide a MEMORY ID" in manage.invoke({"action": "delete"}, alice)
        assert "Nothing was stored" in manage.invoke({"action": "create"}, alice)
        assert "Search failed" in search.invoke({"query": "x", "limit": -1}, alice)
        with pytest.raises(ConfigError, match="langgraph_user_id"):
            search.invoke({"query": "anything"}, {"configurable": {"thread_id": "t1"}})
