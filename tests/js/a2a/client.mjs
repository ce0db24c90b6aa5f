// The A2A JavaScript SDK's client (@a2a-js/sdk, unmodified) against a live agentbuilder:
// card resolution, send, a running task subscribed to from a second client, non-blocking
// sends polled to their end, stream, ListTasks page by page, the push-notification config
// methods and the extended card. Run by tests/agents/protocols/a2a/test_js_sdk.py:
//
//   A2A_URL=http://127.0.0.1:PORT/v1/a2a/calculator A2A_SLOW_URL=.../v1/a2a/slow \
//   A2A_TOKEN=... A2A_TASKS=5 A2A_POLLED=20 node client.mjs
//
// A2A_SLOW_URL is an agent whose model answers slowly: its task still runs when the second
// client subscribes to it.
// It prints one JSON object of what it saw; the Python test asserts on it (and on the
// database). Any failure of the SDK is printed to stderr and exits 1.

import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role, TaskState } from "@a2a-js/sdk";

const url = process.env.A2A_URL;
const slowUrl = process.env.A2A_SLOW_URL;
const token = process.env.A2A_TOKEN;
const tasks = Number(process.env.A2A_TASKS || "5");
const polledTasks = Number(process.env.A2A_POLLED || "20");
// How long a task may take to end when polled or followed: a generous bound for a loaded
// machine (the runs take seconds), only so that a task that never ends is reported as such.
const PATIENCE_MS = 240_000;
if (!url || !slowUrl || !token) {
  console.error("A2A_URL, A2A_SLOW_URL and A2A_TOKEN are required");
  process.exit(2);
}

// The token on every request, as a deployment's client sends it. A function per client, so
// that each client has its own fetch.
const tokenFetch = () => (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const authFetch = tokenFetch();

// The card path is resolved against the base URL as a URL resolves a relative one: the
// agent's URL needs its trailing slash, or the last segment (the agent's name) is replaced.
const slash = (u) => (u.endsWith("/") ? u : `${u}/`);
const base = slash(url);
const slowBase = slash(slowUrl);
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

function textOf(parts) {
  return parts
    .filter((p) => p.content && p.content.$case === "text")
    .map((p) => p.content.value)
    .join("");
}

function answerOf(task) {
  const artifact = (task.artifacts || [])[0];
  if (!artifact) return null;
  return textOf(artifact.parts);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A client of its own: its own fetch, card resolver and transport.
async function clientOf(at, clientConfig = undefined) {
  const fetchImpl = tokenFetch();
  const cardResolver = new DefaultAgentCardResolver({ fetchImpl });
  const transports = [new JsonRpcTransportFactory({ fetchImpl })];
  return new ClientFactory({ transports, cardResolver, clientConfig }).createFromUrl(at);
}

// Poll with getTask until the task is no longer submitted or working (or the bound runs out).
async function pollToItsEnd(polling, started) {
  let task = started;
  let polls = 0;
  const deadline = Date.now() + PATIENCE_MS;
  const live = [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING];
  while (live.includes(task.status.state) && Date.now() < deadline) {
    await sleep(100);
    task = await polling.getTask({ tenant: "", id: started.id, historyLength: undefined });
    polls += 1;
  }
  return { id: started.id, first: TaskState[started.status.state], polls, last: TaskState[task.status.state], answer: answerOf(task) };
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

// ---------------------------------------------------------------- subscribed from a second client
// A non-blocking send to the slow agent answers with the submitted task; a second client
// (its own fetch and transport, as another process's would be) subscribes to it and reads
// its updates to the end, assembling the answer as the encoder documents it: the opening
// task's artifact, then each artifact update appended (`append`) or replacing it.
const slowStarter = await clientOf(slowBase, { polling: true });
const slowStarted = await slowStarter.sendMessage(request("Count slowly.", "js-slow"));
const subscriber = await clientOf(slowBase);
const subscribed = { id: slowStarted.id, first: TaskState[slowStarted.status.state], kinds: [], opening: null, last: null, text: "" };
for await (const event of subscriber.resubscribeTask({ tenant: "", id: slowStarted.id })) {
  const kind = event.payload ? event.payload.$case : "?";
  subscribed.kinds.push(kind);
  if (kind === "task") {
    const opening = event.payload.value;
    subscribed.opening = { id: opening.id, state: TaskState[opening.status.state] };
    subscribed.text = answerOf(opening) || "";
  } else if (kind === "artifactUpdate") {
    const update = event.payload.value;
    const chunk = textOf(update.artifact ? update.artifact.parts : []);
    subscribed.text = update.append ? subscribed.text + chunk : chunk;
  } else if (kind === "statusUpdate") {
    subscribed.last = TaskState[event.payload.value.status.state];
  }
}
out.subscribed = subscribed;

// ---------------------------------------------------------------- non-blocking, polled
// Sent all at once, each answered with its task at once and polled with getTask to its end.
const pollingFactory = new ClientFactory({
  transports,
  cardResolver: resolver,
  clientConfig: { polling: true }, // returnImmediately: the submitted task at once
});
const polling = await pollingFactory.createFromUrl(base);
out.polled = await Promise.all(
  Array.from({ length: polledTasks }, async (_, index) => {
    const started = await polling.sendMessage(request("What is 3 x 5?", `js-poll-${index}`));
    return pollToItsEnd(polling, started);
  }),
);

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
// The task has ended: a config for it is refused, so none is found, listed or deleted.
const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
out.push = {
  create: await refusal(() => client.createTaskPushNotificationConfig(config)),
  get: await refusal(() => client.getTaskPushNotificationConfig({ tenant: "", taskId, id: "c" })),
  listed: listed.configs.length,
  delete: await refusal(() => client.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "c" })),
};

// ---------------------------------------------------------------- the extended card
const extended = await client.getAgentCard();
out.extended = {
  name: extended.name,
  extensions: extended.capabilities.extensions.map((e) => ({ uri: e.uri, params: e.params })),
};

console.log(JSON.stringify(out));
