"""Framework-native approvals. Each module imports its framework, so install its extra first:

- `hitl_sdk.integrations.langgraph` (extra `langgraph`): `interrupt()` with Agent Inbox
  `HumanInterrupt` requests or LangChain's `HumanInTheLoopMiddleware` (batched or per call);
- `hitl_sdk.integrations.openai_agents` (extra `openai-agents`): run interruptions and `RunState`;
- `hitl_sdk.integrations.pydantic_ai` (extra `pydantic-ai`): `DeferredToolRequests`;
- `hitl_sdk.integrations.claude_agent_sdk` (extra `claude-agent-sdk`): a `can_use_tool` callback.

`hitl_sdk.integrations.langgraph_requests` is the pure mapping between LangGraph's request and
response shapes and gateway decisions (no framework import). See docs/integrations.md.
"""
