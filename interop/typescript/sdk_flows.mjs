// Drives @modelcontextprotocol/sdk 1.x (protocol 2025-11-25, `client.experimental.tasks`) against a live server
// and prints what it saw as one JSON object on stdout; tests/test_interop_typescript.py checks it.
//
//   node sdk_flows.mjs tools URL GATE_DIR      the fixture app's tools (tests/fixture_app.py)
//   node sdk_flows.mjs workflows URL           the workflow tools (tests/workflow_fixture_app.py)
//
// Every flow is caught on its own: one failing flow is reported, the others still run.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const [mode, url, gate] = process.argv.slice(2);

async function connect(elicitations) {
    const client = new Client(
        { name: 'interop-ts-sdk', version: '1.0.0' },
        { capabilities: { elicitation: { form: {} }, tasks: { list: {}, cancel: {} } } }
    );
    client.setRequestHandler(ElicitRequestSchema, async request => {
        elicitations.push({ message: request.params.message, relatedTask: request.params._meta?.[RELATED_TASK] ?? null });
        const properties = request.params.requestedSchema?.properties ?? {};
        return { action: 'accept', content: 'approve' in properties ? { approve: true } : {} };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return client;
}

async function drain(stream, onCreated) {
    const seen = { types: [], statuses: [], taskId: null, result: null, error: null };
    for await (const message of stream) {
        seen.types.push(message.type);
        if (message.type === 'taskCreated') {
            seen.taskId = message.task.taskId;
            seen.created = message.task;
            if (onCreated) await onCreated(message.task);
        } else if (message.type === 'taskStatus') {
            seen.statuses.push(message.task.status);
        } else if (message.type === 'result') {
            seen.result = message.result;
        } else if (message.type === 'error') {
            seen.error = { code: message.error.code, message: message.error.message };
        }
    }
    return seen;
}

function callTask(client, name, args, onCreated) {
    const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
        task: { ttl: 60000 }
    });
    return drain(stream, onCreated);
}

async function untilStatus(client, taskId, statuses) {
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
        const task = await client.experimental.tasks.getTask(taskId);
        if (statuses.includes(task.status)) return task;
        await new Promise(resolve => setTimeout(resolve, 100));
    }
    throw new Error(`task ${taskId} never reached ${statuses}`);
}

async function flow(report, name, body) {
    try {
        report[name] = await body();
    } catch (error) {
        report[name] = { exception: { code: error?.code ?? null, message: String(error?.message ?? error) } };
    }
}

async function toolFlows(report) {
    const elicitations = [];
    const client = await connect(elicitations);
    report.serverCapabilities = client.getServerCapabilities();
    report.protocolVersion = client.transport?.protocolVersion ?? null;
    const tools = await client.listTools();
    report.taskSupport = Object.fromEntries(tools.tools.map(tool => [tool.name, tool.execution?.taskSupport ?? null]));

    await flow(report, 'plain', async () => client.callTool({ name: 'double', arguments: { x: 2 } }));
    await flow(report, 'plainQuestion', async () => {
        elicitations.length = 0;
        const result = await client.callTool({ name: 'numbered_steps', arguments: { steps: 1, pause: 0 } });
        return { result, elicitations: [...elicitations] };
    });
    await flow(report, 'task', async () => {
        const seen = await callTask(client, 'double', { x: 21 });
        seen.get = await client.experimental.tasks.getTask(seen.taskId);
        seen.payload = await client.experimental.tasks.getTaskResult(seen.taskId, CallToolResultSchema);
        const listed = await client.experimental.tasks.listTasks();
        seen.listed = listed.tasks.some(task => task.taskId === seen.taskId);
        return seen;
    });
    await flow(report, 'question', async () => {
        elicitations.length = 0;
        const seen = await callTask(client, 'ask_one_midway', {});
        seen.elicitations = [...elicitations];
        return seen;
    });
    await flow(report, 'cancel', async () => {
        let cancelled = null;
        const seen = await callTask(client, 'gated', { gate }, async task => {
            while (!existsSync(join(gate, 'started'))) await new Promise(resolve => setTimeout(resolve, 50));
            cancelled = await client.experimental.tasks.cancelTask(task.taskId);
        });
        seen.cancelled = cancelled;
        seen.after = await untilStatus(client, seen.taskId, ['cancelled', 'completed', 'failed']);
        return seen;
    });
    await flow(report, 'failing', async () => {
        const failed = await callTask(client, 'protocol_error', { code: -32042, message: 'backend refused' });
        failed.after = await client.experimental.tasks.getTask(failed.taskId);
        const toolError = await callTask(client, 'tool_error', { reason: 'nope' });
        return { failed, toolError };
    });
    await flow(report, 'requiredWithoutTask', async () => {
        try {
            await client.callTool({ name: 'needs_task', arguments: { x: 1 } });
            return { refused: false };
        } catch (error) {
            return { refused: true, message: String(error.message) };
        }
    });
    await client.close();
    if (gate) writeFileSync(join(gate, 'release'), '1'); // nothing left waiting on it
}

async function workflowFlows(report) {
    const elicitations = [];
    const client = await connect(elicitations);
    await flow(report, 'plain', async () => client.callTool({ name: 'greet', arguments: { name: 'Ada' } }));
    await flow(report, 'plainQuestion', async () => {
        elicitations.length = 0;
        const result = await client.callTool({ name: 'questions', arguments: { kinds: ['elicitation'] } });
        return { result, elicitations: [...elicitations] };
    });
    await flow(report, 'question', async () => {
        elicitations.length = 0;
        const seen = await callTask(client, 'questions', { kinds: ['elicitation'] });
        seen.elicitations = [...elicitations];
        return seen;
    });
    await flow(report, 'failing', async () => {
        const seen = await callTask(client, 'fail', { mode: 'task-error' });
        seen.after = await client.experimental.tasks.getTask(seen.taskId);
        return seen;
    });
    await client.close();
}

const report = {};
try {
    if (mode === 'tools') await toolFlows(report);
    else if (mode === 'workflows') await workflowFlows(report);
    else throw new Error(`unknown mode ${mode}`);
} catch (error) {
    report.fatal = String(error?.stack ?? error);
}
process.stdout.write(JSON.stringify(report) + '\n');
