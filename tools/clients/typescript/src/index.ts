/**
 * The grove client: `GroveClient` for every route of `grove serve`, `openStore` for a store in
 * this process (the native addon) with the same client, and `GroveError`.
 * The pi adapter lives in `./pi.js` (it needs `@earendil-works/pi-agent-core`), the LangGraph
 * checkpointer in `./langgraph.js` (it needs `@langchain/langgraph-checkpoint`), the OpenAI Agents
 * SDK session in `./openai-agents.js`, pi 0.85–0.99's commit-based `Storage` and `SessionRepo` in
 * `./pi-storage.js`, the Claude Agent SDK's session store in `./claude-agent-sdk.js`.
 */
export { AppendBatcher, type AppendBatcherOptions } from "./batcher.js";
export { applyContextChange, GroveClient, type GroveClientOptions } from "./client.js";
export { GroveError, isGroveError } from "./errors.js";
export { InProcessTransport, openStore, type OpenStoreOptions } from "./native.js";
export { type ClientTransport, type Endpoint, parseEndpoint } from "./transport.js";
export type * from "./types.js";
