"""TieredChatMessageHistory in RunnableWithMessageHistory, with a LangChain fake chat model."""

import subprocess
import sys
import textwrap

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_tiered_memory import MemoryConfig, TieredChatMessageHistory, TieredMemory
from langchain_tiered_memory.tokens import TiktokenCounter


class RecordingModel(GenericFakeChatModel):
    """A fake chat model that also records every input it was given."""

    seen: list = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def _chain(memory, model):
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    return RunnableWithMessageHistory(
        prompt | model,
        # with_memory: the model gets the memory block too, not only the conversation.
        lambda session_id: TieredChatMessageHistory(memory, "alice", session_id, with_memory=True),
        input_messages_key="question",
        history_messages_key="history",
    )


def test_runnable_with_message_history_end_to_end(data_dir):
    config = MemoryConfig(max_tokens=300, system_reserve=40, output_reserve=40)
    answers = iter([AIMessage(f"answer number {i} " + "blah " * 10) for i in range(30)])
    model = RecordingModel(messages=answers, seen=[])
    counter = TiktokenCounter()
    with TieredMemory(data_dir, config) as memory:
        chain = _chain(memory, model)
        cfg = {"configurable": {"session_id": "s1"}}
        for i in range(30):
            out = chain.invoke({"question": f"question {i}, please answer"}, config=cfg)
            assert out.text.startswith(f"answer number {i}")
        log = memory.threads.messages("alice", "s1")
        assert len(log) == 60  # every turn kept, question and answer
        assert [m.type for m in log[:2]] == ["human", "ai"]
        last_input = model.seen[-1]
        history = last_input[1:-1]
        if history and history[0].type == "system":
            # The memory block (summary of what left the window, entities) comes first.
            assert history[0].text.startswith("<memory>")
            history = history[1:]
        # The model saw a budgeted window, the newest turns, not the whole log.
        assert 0 < len(history) < 58
        # ... and exactly the newest messages stored before that last turn.
        before_last = log[:-2]
        assert [m.text for m in history] == [m.text for m in before_last[-len(history):]]
        assert counter.count_messages(history) <= config.context_budget - config.system_reserve


def test_history_survives_a_process_restart(data_dir):
    code = textwrap.dedent(
        """
        import sys
        from langchain_core.messages import AIMessage, HumanMessage
        from langchain_tiered_memory import TieredChatMessageHistory, TieredMemory
        with TieredMemory(sys.argv[1]) as m:
            TieredChatMessageHistory(m, "alice", "s").add_messages([HumanMessage("I live in Lyon"), AIMessage("Noted")])
        """
    )
    subprocess.run([sys.executable, "-c", code, str(data_dir)], check=True, timeout=120)
    with TieredMemory(data_dir) as memory:
        history = TieredChatMessageHistory(memory, "alice", "s")
        assert isinstance(history, BaseChatMessageHistory)
        memory.flush()
        view = history.messages
        assert [m.text for m in view if not m.text.startswith("<memory>")] == ["I live in Lyon", "Noted"]
        assert [m.text for m in memory.threads.messages("alice", "s")] == ["I live in Lyon", "Noted"]


async def test_async_methods_and_clear(data_dir):
    with TieredMemory(data_dir) as memory:
        history = TieredChatMessageHistory(memory, "alice", "s")
        await history.aadd_messages([HumanMessage("one"), AIMessage("two")])
        assert [m.text for m in await history.aget_messages()] == ["one", "two"]
        history.add_user_message("three")
        assert len(history.messages) == 3
        history.clear()
        assert history.messages == [] and memory.threads.messages("alice", "s") == []
