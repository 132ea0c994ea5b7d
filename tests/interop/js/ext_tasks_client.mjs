// The official ext-tasks client (@modelcontextprotocol/ext-tasks) on the TypeScript SDK's Client,
// driven by tests/interop/test_ext_tasks.py: one flow per run, its outcome as one JSON line on stdout.
//
//   node ext_tasks_client.mjs URL FLOW [GATE]
//
// FLOW: plain | task | question | cancel | tool-error | protocol-error | workflow-question
// At 2026-07-28 the session needs a raw request path (`rawDispatch`) and the request framing
// (`v2RequestFraming`), which the SDK Client does not expose; `rawDispatch` below is a plain
// Streamable HTTP POST, the same one any 2026-07-28 client sends.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createApplicationInputHandler, createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const [url, flow, gate] = process.argv.slice(2);
const PROTOCOL_VERSION = "2026-07-28";
const clientInfo = { name: "interop-ext-tasks", version: "1.0.0" };
const clientCapabilities = { elicitation: { form: {} }, extensions: { "io.modelcontextprotocol/tasks": {} } };
const questions = [];
let nextId = 1;

async function rawDispatch(request, options) {
  if (process.env.INTEROP_DEBUG) process.stderr.write(`>> ${JSON.stringify(request)}\n`);
  // The port hands over method and params; the JSON-RPC envelope is the dispatcher's to add.
  const message = { jsonrpc: "2.0", id: nextId++, ...request };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": PROTOCOL_VERSION,
    "mcp-method": request.method,
    ...(options?.context?.headers ?? {}),
  };
  // The routing header every 2026-07-28 transport mirrors from the body (the SDK's own does the same).
  const name = request.method === "tools/call" ? request.params?.name : request.params?.taskId;
  if (typeof name === "string" && !Object.keys(headers).some((key) => key.toLowerCase() === "mcp-name")) {
    headers["mcp-name"] = name;
  }
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify(message),
    signal: options?.signal,
  });
  const body = await response.text();
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of body.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const answer = JSON.parse(line.slice(5));
      if (answer.id === message.id && ("result" in answer || "error" in answer)) return reply(answer);
    }
    throw new Error(`no response to ${request.method} in the event stream`);
  }
  return reply(JSON.parse(body));
}

function reply(message) {
  return "error" in message ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
}

const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion: PROTOCOL_VERSION, clientInfo, clientCapabilities },
  onInputRequest: createApplicationInputHandler({
    elicitation: async (request) => {
      questions.push(request.params.message);
      return { action: "accept", content: { approve: true } };
    },
    sampling: async () => {
      throw new Error("no model here");
    },
    roots: async () => ({ roots: [] }),
  }),
});

async function settle(name, args) {
  const execution = await session.callTool(name, args);
  const { outcome } = await execution.settle();
  return { kind: execution.kind, taskId: execution.handle?.taskId, ...describe(outcome) };
}

function describe(outcome) {
  if (outcome.status === "completed") return { status: "completed", result: outcome.result };
  if (outcome.status === "failed") {
    const error = outcome.error;
    return { status: "failed", error: { code: error.code ?? error.error?.code, message: error.message } };
  }
  return { status: outcome.status };
}

async function until(path, seconds) {
  for (let waited = 0; !existsSync(path); waited += 0.1) {
    if (waited > seconds) throw new Error(`${path} did not appear within ${seconds}s`);
    await sleep(100);
  }
}

let report;
try {
  if (flow === "plain") {
    report = { echo: await settle("echo", { text: "plain" }), double: await settle("double", { x: 21 }) };
  } else if (flow === "task") {
    report = await settle("needs_task", { x: 5 });
  } else if (flow === "question") {
    report = await settle("approve_step", { gate });
  } else if (flow === "workflow-question") {
    report = await settle("questions", {});
  } else if (flow === "tool-error") {
    report = await settle("tool_error", {});
  } else if (flow === "protocol-error") {
    report = await settle("protocol_error", {});
  } else if (flow === "cancel") {
    const execution = await session.callTool("gated", { gate });
    await until(join(gate, "started"), 60);
    await execution.cancel();
    const { outcome } = await execution.settle();
    report = { kind: execution.kind, taskId: execution.handle?.taskId, ...describe(outcome) };
  } else {
    throw new Error(`unknown flow ${flow}`);
  }
  report.questions = questions;
} finally {
  await session.close();
  await client.close();
}
process.stdout.write(JSON.stringify(report) + "\n");
