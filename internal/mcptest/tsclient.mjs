// Drives a dsh MCP server with the official TypeScript SDK client over streamable HTTP and
// prints a JSON report for the Go test: the listed tools, a call, a policy denial and a
// cancelled call. Usage: MCP_SDK_DIR=<.../@modelcontextprotocol/sdk> node tsclient.mjs URL
// The test paces the cancellation through standard input: the line "abort" once the tool
// runs, then "close" once the tool saw the cancellation.
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { createInterface } from "node:readline";

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const expectLine = async (want) => {
  const { value } = await lines.next();
  if (value !== want) throw new Error(`expected ${want} on stdin, got ${value}`);
};

const sdk = process.env.MCP_SDK_DIR;
if (!sdk) throw new Error("MCP_SDK_DIR is not set");
const load = (p) => import(pathToFileURL(join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const client = new Client({ name: "dsh-tsclient-test", version: "0.0.1" });
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));

const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
const lookup = await client.callTool({ name: "lookup", arguments: { key: "ts" } });
const forbidden = await client.callTool({ name: "forbidden", arguments: {} });

const controller = new AbortController();
const waiting = client.callTool({ name: "wait", arguments: {} }, undefined, { signal: controller.signal })
  .then(() => "not cancelled", (err) => `${err?.name}: ${err?.message}`);
await expectLine("abort");
controller.abort();
const cancelled = await waiting;
// The SDK sends notifications/cancelled without awaiting it; closing the transport before
// the tool saw it would abort that POST.
await expectLine("close");

process.stdout.write(JSON.stringify({
  tools: tools.map((t) => t.name),
  lookup,
  forbidden,
  cancelled,
  lookupReadOnly: byName.lookup?.annotations?.readOnlyHint === true,
  writeDestructive: byName.write?.annotations?.destructiveHint === true,
}));
await client.close();
