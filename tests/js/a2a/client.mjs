// The A2A JavaScript SDK's client (@a2a-js/sdk, unmodified) against a live agentbuilder:
// card resolution, send, a non-blocking send polled to its end, stream, ListTasks page by
// page, the push-notification config methods and the extended card. Run by
// tests/agents/protocols/a2a/test_js_sdk.py:
//
//   A2A_URL=http://127.0.0.1:PORT/v1/a2a/calculator A2A_TOKEN=... node client.mjs
//
// It prints one JSON object of what it saw; the Python test asserts on it (and on the
// database). Any failure of the SDK is printed to stderr and exits 1.

import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.env.A2A_URL;
const token = process.env.A2A_TOKEN;
const tasks = Number(process.env.A2A_TASKS || "5");
if (!url || !token) {
  console.error("A2A_URL and A2A_TOKEN are required");
  process.exit(2);
}

// The token on every request, as a deployment's client sends it.
const authFetch = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

// The card path is resolved against the base URL as a URL resolves a relative one: the
// agent's URL needs its trailing slash, or the last segment (the agent's name) is replaced.
const base = url.endsWith("/") ? url : `${url}/`;
const resolver = new DefaultAgentCardResolver({ fetchImpl: authFetch });

function message(text, id) {
  return {
    messageId: id,
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(text, id) {
  return { tenant: "", message: message(text, id), configuration: undefined, metadata: undefined };
}

function answerOf(task) {
  const artifact = (task.artifacts || [])[0];
  if (!artifact) return null;
  return artifact.parts
    .filter((p) => p.content && p.content.$case === "text")
    .map((p) => p.content.value)
    .join("");
}

async function refusal(call) {
  try {
    await call();
  } catch (error) {
    return { name: error.constructor.name, code: error.code ?? null, message: String(error.message) };
  }
  return null;
}

const out = {};

// ---------------------------------------------------------------- the card
const card = await resolver.resolve(base);
const bearer = card.securitySchemes.bearer;
out.card = {
  name: card.name,
  interfaces: card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion, i.url]),
  bearer: bearer.scheme ? [bearer.scheme.$case, bearer.scheme.value.scheme] : null,
  streaming: card.capabilities.streaming,
  pushNotifications: card.capabilities.pushNotifications,
  extendedAgentCard: card.capabilities.extendedAgentCard,
};

const transports = [new JsonRpcTransportFactory({ fetchImpl: authFetch })];
const factory = new ClientFactory({ transports, cardResolver: resolver });
const client = await factory.createFromUrl(base);
out.protocolVersion = client.protocolVersion;

// ---------------------------------------------------------------- send
const sent = [];
for (let index = 0; index < tasks; index++) {
  const result = await client.sendMessage(request("What is 3 x 5?", `js-send-${index}`));
  sent.push({ id: result.id, state: TaskState[result.status.state], answer: answerOf(result) });
}
out.sent = sent;

// ---------------------------------------------------------------- non-blocking, polled
const pollingFactory = new ClientFactory({
  transports,
  cardResolver: resolver,
  clientConfig: { polling: true }, // returnImmediately: the working task at once
});
const polling = await pollingFactory.createFromUrl(base);
const started = await polling.sendMessage(request("What is 3 x 5?", "js-poll"));
const polled = { id: started.id, first: TaskState[started.status.state], polls: 0 };
let task = started;
const deadline = Date.now() + 60_000; // a generous bound for a loaded machine; the run is short
while (task.status.state === TaskState.TASK_STATE_WORKING && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 50));
  task = await client.getTask({ tenant: "", id: started.id, historyLength: undefined });
  polled.polls += 1;
}
polled.last = TaskState[task.status.state];
polled.answer = answerOf(task);
out.polled = polled;

// ---------------------------------------------------------------- stream
const kinds = [];
let streamedTask = null;
let streamedState = null;
for await (const event of client.sendMessageStream(request("What is 3 x 5?", "js-stream"))) {
  const kind = event.payload ? event.payload.$case : "?";
  kinds.push(kind);
  if (kind === "task") streamedTask = event.payload.value.id;
  if (kind === "statusUpdate") streamedState = TaskState[event.payload.value.status.state];
}
out.stream = { kinds, id: streamedTask, last: streamedState };

// ---------------------------------------------------------------- ListTasks, page by page
const pages = [];
let pageToken = "";
do {
  const page = await client.listTasks({
    tenant: "",
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 2,
    pageToken,
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: false,
  });
  pages.push({
    ids: page.tasks.map((t) => t.id),
    pageSize: page.pageSize,
    totalSize: page.totalSize,
    artifacts: page.tasks.reduce((n, t) => n + (t.artifacts || []).length, 0),
  });
  pageToken = page.nextPageToken;
} while (pageToken && pages.length < 100);
out.pages = pages;

// ---------------------------------------------------------------- push-notification config
const taskId = sent[0].id;
const config = { tenant: "", id: "c", taskId, url: "https://example.invalid/hook", token: "", authentication: undefined };
out.push = [
  await refusal(() => client.createTaskPushNotificationConfig(config)),
  await refusal(() => client.getTaskPushNotificationConfig({ tenant: "", taskId, id: "c" })),
  await refusal(() => client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" })),
  await refusal(() => client.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "c" })),
];

// ---------------------------------------------------------------- the extended card
const extended = await client.getAgentCard();
out.extended = {
  name: extended.name,
  extensions: extended.capabilities.extensions.map((e) => ({ uri: e.uri, params: e.params })),
};

console.log(JSON.stringify(out));
