// A client written against the ACP TypeScript SDK's unstable entry point (@agentclientprotocol/sdk 2.4.0,
// `@agentclientprotocol/sdk/unstable`), driving the real acp-agent process through each part of the November
// protocol (issue 29). Run by tests/ts_client/test_ts_sdk_client.py, which starts the fake model server first.
//
// Env: ACP_SDK_DIR (the SDK package), AGENT_CMD (JSON argv of the agent), PROJECT (the sessions' cwd),
// MODEL_URL (the fake model: POST /_test/release lets its stalled turn go on), WIRE_DIR (where both directions
// of the ACP wire are written, one JSON message a line, for the test to validate against the schema).
// Prints one JSON line on stdout: {"parts": {name: "ok" | why it failed}, "facts": {...}}.
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import assert from "node:assert/strict";

const env = process.env;
const sdkDir = env.ACP_SDK_DIR;
const pkg = JSON.parse(readFileSync(join(sdkDir, "package.json"), "utf8"));
// The SDK's own entry point, as `import ... from "@agentclientprotocol/sdk/unstable"` resolves it.
const acp = await import(pathToFileURL(join(sdkDir, pkg.exports["./unstable"].import)).href);
const { client, ndJsonStream, methods, McpOverAcpProvider, McpProtocolError } = acp;

const project = env.PROJECT;
const wireDir = env.WIRE_DIR;
const WAIT_MS = Number(env.WAIT_MS ?? 60000);

// --- the agent process, its wire teed to files -------------------------------------------------------
const [command, ...args] = JSON.parse(env.AGENT_CMD);
const child = spawn(command, args, { cwd: project, env, stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

function tee(file) {
    let rest = "";
    const decoder = new TextDecoder();
    return new TransformStream({
        transform(chunk, controller) {
            rest += decoder.decode(chunk, { stream: true });
            const lines = rest.split("\n");
            rest = lines.pop();
            for (const line of lines) if (line.trim()) appendFileSync(join(wireDir, file), line + "\n");
            controller.enqueue(chunk);
        },
    });
}
const fromAgent = Readable.toWeb(child.stdout).pipeThrough(tee("agent.jsonl"));
const toAgentTee = tee("client.jsonl");
toAgentTee.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
const stream = ndJsonStream(toAgentTee.writable, fromAgent);

// --- what the client sees ------------------------------------------------------------------------------
const updates = []; // {sessionId, update}, in arrival order
const waiters = [];
function onUpdate(params) {
    updates.push({ sessionId: params.sessionId, update: params.update });
    for (const w of [...waiters]) w();
}
/** The first update from `from` on that matches, waiting for it (bounded). */
function waitFor(pred, from = 0, what = "an update") {
    return new Promise((resolve, reject) => {
        const check = () => {
            const i = updates.findIndex((u, k) => k >= from && pred(u));
            if (i < 0) return false;
            waiters.splice(waiters.indexOf(check), 1);
            clearTimeout(timer);
            resolve(updates[i]);
            return true;
        };
        const timer = setTimeout(() => {
            waiters.splice(waiters.indexOf(check), 1);
            reject(new Error(`timed out waiting for ${what}`));
        }, WAIT_MS);
        waiters.push(check);
        check();
    });
}
const of = (sid, from = 0) => updates.slice(from).filter((u) => u.sessionId === sid).map((u) => u.update);
const kind = (k) => (u) => u.sessionUpdate === k;
const text = (blocks) => blocks.map((b) => b.text).join("");

const mcpCalls = []; // [inner method, "result" | "error" | "threw"]
const provider = new McpOverAcpProvider();
const app = client({ name: "ts-sdk-client" })
    .onNotification(methods.client.session.update, ({ params }) => onUpdate(params))
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
        const allow = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
        return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .onRequest(methods.client.mcp.message, async (cx) => {
        try {
            const outcome = await provider.handleRequest(cx);
            mcpCalls.push([cx.params.method, "error" in outcome ? `error: ${outcome.error.message}` : "result"]);
            return outcome;
        } catch (e) {
            mcpCalls.push([cx.params.method, `threw: ${e.message}`]);
            throw e;
        }
    });

// The MCP server this client provides over ACP, through the SDK's own binding.
function echoServer({ method, params }) {
    switch (method) {
        case "server/discover": // MCP 2026-07-28's handshake-free discovery, the binding's only revision
            return {
                result: {
                    supportedVersions: ["2026-07-28"],
                    capabilities: { tools: {} },
                    serverInfo: { name: "echo", version: "1" },
                    resultType: "complete",
                    ttlMs: 0,
                    cacheScope: "private",
                },
            };
        case "tools/list":
            return {
                result: {
                    tools: [
                        {
                            name: "shout",
                            description: "Shout a text",
                            inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
                        },
                    ],
                    resultType: "complete",
                    ttlMs: 0,
                    cacheScope: "private",
                },
            };
        case "tools/call":
            return {
                result: {
                    content: [{ type: "text", text: `${String(params.arguments.text).toUpperCase()}!` }],
                    resultType: "complete",
                },
            };
        default:
            throw new McpProtocolError(-32601, `no ${method} here`);
    }
}

// --- the parts ------------------------------------------------------------------------------------------
const parts = {};
const facts = {};
async function part(name, body) {
    try {
        await body();
        parts[name] = "ok";
    } catch (e) {
        parts[name] = `${e.name}: ${e.message}`.slice(0, 2000);
    }
}
const rejection = async (promise) => {
    try {
        await promise;
    } catch (e) {
        return e;
    }
    throw new Error("the request succeeded where it must fail");
};
const prompt = (cx, sessionId, words) =>
    cx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: words }] });
/** The updates a `session/load` replays (sent before its answer). */
async function replay(cx, sessionId) {
    const from = updates.length;
    await cx.request(methods.agent.session.load, { sessionId, cwd: project, mcpServers: [] });
    return of(sessionId, from);
}
const messages = (us, k) => {
    const out = []; // [messageId, text] per message, in order
    for (const u of us.filter(kind(k))) {
        const last = out[out.length - 1];
        if (last && last[0] === u.messageId) last[1] += u.content.text;
        else out.push([u.messageId, u.content.text]);
    }
    return out;
};

await app.connectWith(stream, async (cx) => {
    let init;
    let sA;
    let live = [];
    await part("initialize", async () => {
        init = await cx.request(methods.agent.initialize, {
            protocolVersion: 1,
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, subagents: {} },
            clientInfo: { name: "ts-sdk-client", version: pkg.version },
        });
        const caps = init.agentCapabilities;
        for (const c of ["fork", "title", "archive", "status", "systemPrompt", "list", "close"]) {
            assert.ok(caps.sessionCapabilities?.[c], `sessionCapabilities.${c} advertised`);
        }
        assert.deepEqual(Object.keys(caps.auth ?? {}).sort(), ["logout", "status"]);
        assert.equal(caps.mcpCapabilities?.acp, true, "mcpCapabilities.acp");
        assert.equal(init._meta?.steering?.supported, true, "_meta.steering.supported");
    });

    await part("tool_call_name", async () => {
        sA = (await cx.request(methods.agent.session.new, { cwd: project, mcpServers: [] })).sessionId;
        const answer = await prompt(cx, sA, "read the notes");
        assert.equal(answer.stopReason, "end_turn");
        const calls = of(sA).filter((u) => u.toolCallId === "call_read");
        assert.ok(calls.length >= 2, `tool_call and its updates: ${JSON.stringify(calls)}`);
        assert.equal(calls[0].sessionUpdate, "tool_call");
        for (const u of calls) assert.equal(u.name, "read_file", `name on ${u.sessionUpdate}`);
        assert.equal(calls.at(-1).status, "completed");
    });

    await part("message_ids_live", async () => {
        const chunks = of(sA).filter(kind("agent_message_chunk"));
        assert.ok(chunks.every((u) => typeof u.messageId === "string" && u.messageId), "every chunk has an id");
        live = messages(of(sA), "agent_message_chunk");
        assert.deepEqual(
            live.map(([, t]) => t),
            ["Reading the notes.", "The notes say hello."],
            "one id per message, the same on each of its chunks",
        );
        assert.notEqual(live[0][0], live[1][0]);
        facts.liveMessageIds = live.map(([id]) => id);
    });

    await part("message_ids_replayed", async () => {
        const replayed = await replay(cx, sA);
        assert.deepEqual(messages(replayed, "agent_message_chunk"), live, "the same ids again on session/load");
        const users = messages(replayed, "user_message_chunk");
        assert.deepEqual(users.map(([, t]) => t), ["read the notes"]);
        assert.ok(users[0][0], "the prompt's chunk has an id");
    });

    await part("queued_prompt_and_steering", async () => {
        const from = updates.length;
        const done = [];
        const second = prompt(cx, sA, "start the long task").then((r) => (done.push("second"), r));
        await waitFor((u) => u.sessionId === sA && kind("agent_message_chunk")(u.update), from, "the stalled turn's text");
        // a prompt while the turn runs: queued, answered when it has run
        const third = prompt(cx, sA, "the queued question").then((r) => (done.push("third"), r));
        const steered = await cx.request("_session/steering", {
            sessionId: sA,
            prompt: [{ type: "text", text: "STEER: also check the tests" }],
        });
        assert.deepEqual(steered, { outcome: "injected" });
        await fetch(`${env.MODEL_URL}/_test/release`, { method: "POST" });
        assert.equal((await second).stopReason, "end_turn");
        assert.equal((await third).stopReason, "end_turn");
        assert.deepEqual(done, ["second", "third"], "the queued prompt ran after the running one");
        const texts = messages(of(sA, from), "agent_message_chunk").map(([, t]) => t);
        assert.deepEqual(texts, ["Working on it.", "Steered.", "Queued answer."]);
        const idle = await cx.request("_session/steering", {
            sessionId: sA,
            prompt: [{ type: "text", text: "only with a prompt" }],
            _meta: { steering: { idleBehavior: "promptRequired" } },
        });
        assert.deepEqual(idle, { outcome: "promptRequired" });
    });

    let fork;
    await part("fork_at_message", async () => {
        // at the agent's message: everything through the end of its turn
        const atReply = await cx.request(methods.agent.session.fork, {
            sessionId: sA,
            cwd: project,
            mcpServers: [],
            _meta: { forkAtMessageId: live[1][0] },
        });
        assert.notEqual(atReply.sessionId, sA);
        const replayed = await replay(cx, atReply.sessionId);
        assert.deepEqual(messages(replayed, "agent_message_chunk"), live);
        // at a prompt: what came before it, to edit and send again
        const users = messages(await replay(cx, sA), "user_message_chunk");
        const long = users.find(([, t]) => t === "start the long task");
        assert.ok(long, `the second prompt replayed: ${JSON.stringify(users)}`);
        fork = (
            await cx.request(methods.agent.session.fork, {
                sessionId: sA,
                cwd: project,
                mcpServers: [],
                _meta: { forkAtMessageId: long[0] },
            })
        ).sessionId;
        const cut = await replay(cx, fork);
        assert.deepEqual(messages(cut, "user_message_chunk").map(([, t]) => t), ["read the notes"]);
        assert.deepEqual(messages(cut, "agent_message_chunk"), live);
        const unknown = await rejection(
            cx.request(methods.agent.session.fork, {
                sessionId: sA,
                cwd: project,
                mcpServers: [],
                _meta: { forkAtMessageId: "msg_nope" },
            }),
        );
        assert.equal(unknown.code, -32602);
    });

    await part("set_title", async () => {
        const from = updates.length;
        const answer = await cx.request(methods.agent.session.setTitle, { sessionId: sA, title: "  Release   notes " });
        assert.equal(answer.title, "Release notes");
        await waitFor((u) => u.sessionId === sA && u.update.sessionUpdate === "session_info_update", from, "session_info_update");
        const info = of(sA, from).filter(kind("session_info_update"));
        assert.equal(info.at(-1).title, "Release notes");
        const listed = (await cx.request(methods.agent.session.list, {})).sessions.find((s) => s.sessionId === sA);
        assert.equal(listed.title, "Release notes");
        assert.equal((await rejection(cx.request(methods.agent.session.setTitle, { sessionId: sA, title: " " }))).code, -32602);
    });

    await part("archive_and_list_filter", async () => {
        const ids = async (archived) =>
            (await cx.request(methods.agent.session.list, archived ? { archived } : {})).sessions.map((s) => s.sessionId);
        assert.ok((await ids()).includes(fork));
        await cx.request(methods.agent.session.archive, { sessionId: fork });
        assert.ok(!(await ids()).includes(fork), "archived: out of the default list");
        assert.ok((await ids("exclude")).includes(sA) && !(await ids("exclude")).includes(fork));
        assert.deepEqual(await ids("only"), [fork]);
        const all = await ids("include");
        assert.ok(all.includes(fork) && all.includes(sA));
        const archived = (await cx.request(methods.agent.session.list, { archived: "only" })).sessions[0];
        assert.equal(archived.archived, true);
        facts.archivedStatus = (await cx.request(methods.agent.session.status, { sessionId: fork })).status;
        await cx.request(methods.agent.session.unarchive, { sessionId: fork });
        assert.ok((await ids()).includes(fork), "unarchived: back in the list");
        assert.deepEqual(await ids("only"), []);
    });

    await part("session_status", async () => {
        assert.equal((await cx.request(methods.agent.session.status, { sessionId: sA })).status, "open");
        assert.equal(facts.archivedStatus, "saved", "an archived session is closed, kept");
        const unknown = await rejection(cx.request(methods.agent.session.status, { sessionId: "no-such-session" }));
        assert.equal(unknown.code, -32002);
    });

    await part("system_prompt", async () => {
        const sp = (mode, words) => ({ mode, content: [{ type: "text", text: words }] });
        const sB = await cx.request(methods.agent.session.new, {
            cwd: project,
            mcpServers: [],
            systemPrompt: sp("append", "APPEND-MARK: answer briefly."),
        });
        assert.equal((await prompt(cx, sB.sessionId, "hello B")).stopReason, "end_turn");
        const sC = await cx.request(methods.agent.session.new, {
            cwd: project,
            mcpServers: [],
            systemPrompt: sp("override", "OVERRIDE-MARK: you are a test oracle."),
        });
        assert.equal((await prompt(cx, sC.sessionId, "hello C")).stopReason, "end_turn");
        const before = (await cx.request(methods.agent.session.list, {})).sessions.length;
        const bad = await rejection(
            cx.request(methods.agent.session.new, { cwd: project, mcpServers: [], systemPrompt: sp("replace-all", "x") }),
        );
        assert.equal(bad.code, -32602, "a mode the agent cannot honour is an error");
        assert.equal((await cx.request(methods.agent.session.list, {})).sessions.length, before, "no session opened");
    });

    await part("subagent_update", async () => {
        const from = updates.length;
        assert.equal((await prompt(cx, sA, "explore for foo")).stopReason, "end_turn");
        const seen = updates.slice(from);
        const announced = seen.filter((u) => u.sessionId === sA && u.update.sessionUpdate === "subagent_update");
        assert.ok(announced.length >= 2, `announced and finished: ${JSON.stringify(announced)}`);
        const childId = announced[0].update.sessionId;
        assert.deepEqual(announced[0].update.state, { state: "running" });
        assert.equal(announced[0].update.title, "explore");
        assert.equal(announced[0].update.description, "find foo");
        // idle with the child's own usage: its one request, at the fake model's default 42 in, 7 out
        const usage = { totalTokens: 49, inputTokens: 42, outputTokens: 7, cachedReadTokens: 0, cachedWriteTokens: 0 };
        assert.deepEqual(announced.at(-1).update.state, { state: "idle", stopReason: "end_turn", usage });
        const firstChild = seen.findIndex((u) => u.sessionId === childId);
        assert.ok(firstChild > seen.indexOf(announced[0]), "announced before its traffic");
        const childText = messages(seen.filter((u) => u.sessionId === childId).map((u) => u.update), "agent_message_chunk");
        assert.deepEqual(childText.map(([, t]) => t), ["foo is in a.py."]);
        assert.ok(childText[0][0], "the child's chunks carry a messageId");
        facts.subagentCapabilities = announced.map((u) => u.update.capabilities ?? null);
    });

    await part("mcp_over_acp", async () => {
        const registration = provider.registerServer(cx, { name: "echo", handler: echoServer });
        const sD = (
            await cx.request(methods.agent.session.new, { cwd: project, mcpServers: [registration.declaration] })
        ).sessionId;
        assert.equal((await prompt(cx, sD, "shout hi")).stopReason, "end_turn");
        facts.mcpCalls = mcpCalls.slice();
        const call = of(sD).filter((u) => u.toolCallId === "call_shout");
        assert.ok(call.length >= 2, `the MCP tool's call: ${JSON.stringify(call)}`);
        for (const u of call) assert.equal(u.name, "mcp__echo__shout");
        assert.equal(call.at(-1).status, "completed", JSON.stringify({ call: call.at(-1), mcpCalls }));
        assert.ok(mcpCalls.some(([m, outcome]) => m === "tools/call" && outcome === "result"), JSON.stringify(mcpCalls));
    });

    await part("auth_status_and_logout", async () => {
        const status = await cx.request(methods.agent.auth.status, {});
        assert.equal(status.state, "authenticated");
        assert.ok(!JSON.stringify(status).includes(env.ACP_AGENT_API_KEY), "the key itself is never shown");
        await cx.request(methods.agent.logout, {});
        // the key is forgotten; the configured endpoint stays, and a local server needs no key
        assert.deepEqual(await cx.request(methods.agent.auth.status, {}), { state: "not_required" });
        const sE = (await cx.request(methods.agent.session.new, { cwd: project, mcpServers: [] })).sessionId;
        assert.equal((await prompt(cx, sE, "hello without a key")).stopReason, "end_turn");
    });
});

child.stdin.end(); // the agent must exit by itself when its input ends
const exit = await exited;
process.stdout.write(JSON.stringify({ parts, facts, agentExit: exit }) + "\n");
