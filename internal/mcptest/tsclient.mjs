// Drives a dsh MCP server with the official TypeScript SDK client over streamable HTTP and
// prints a JSON report for the Go test: the listed tools, a call, a policy denial and a
// cancelled call. Usage: MCP_SDK_DIR=<.../@modelcontextprotocol/sdk> node tsclient.mjs URL
import { pathToFileURL } from "node:url";
import { join } from "node:path";

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
setTimeout(() => controller.abort(), 200);
let cancelled = "not cancelled";
try {
  await client.callTool({ name: "wait", arguments: {} }, undefined, { signal: controller.signal });
} catch (err) {
  cancelled = `${err?.name}: ${err?.message}`;
}
// The SDK sends notifications/cancelled without awaiting it; closing the transport at once
// would abort that POST.
await new Promise((resolve) => setTimeout(resolve, 500));

process.stdout.write(JSON.stringify({
  tools: tools.map((t) => t.name),
  lookup,
  forbidden,
  cancelled,
  lookupReadOnly: byName.lookup?.annotations?.readOnlyHint === true,
  writeDestructive: byName.write?.annotations?.destructiveHint === true,
}));
await client.close();
