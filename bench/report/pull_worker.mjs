// The TypeScript pull worker of bench-report's pull runs: sdk/typescript's
// Worker, built (npm run build in sdk/typescript). The protocol of the
// report's workers (bench/report/pullworker.go): prints "ready", pulls from
// the first line on stdin, prints "handled" once its handler has seen
// --expect jobs (when set), stops gracefully at the second line or EOF, and
// prints {"jobs": n, "leases": m}. Its handler acknowledges every id.
//
//   node bench/report/pull_worker.mjs --url http://127.0.0.1:8080 --queue bench --concurrency 8
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { Client, Worker } from "../../sdk/typescript/dist/src/index.js";

const { values: a } = parseArgs({
  options: {
    url: { type: "string" },
    queue: { type: "string", default: "bench" },
    token: { type: "string", default: "" },
    concurrency: { type: "string", default: "8" },
    "max-ids": { type: "string", default: "1" },
    wait: { type: "string", default: "5" },
    expect: { type: "string", default: "0" },
  },
});
if (!a.url) throw new Error("--url is required");
const count = { jobs: 0, leases: 0 };
const expect = Number(a.expect);
const worker = new Worker(new Client(a.url, { token: a.token || undefined }), a.queue, (w) => {
  const before = count.jobs;
  count.jobs += w.jobs.length;
  count.leases++;
  if (expect > 0 && before < expect && count.jobs >= expect) console.log("handled");
}, { concurrency: Number(a.concurrency), maxIds: Number(a["max-ids"]), waitSeconds: Number(a.wait) });

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
console.log("ready");
if ((await lines.next()).done) throw new Error("pull_worker: no gate line");
worker.start();
await lines.next();
if (!(await worker.stop(60_000))) throw new Error("pull_worker: the loops did not end");
console.log(JSON.stringify(count));
process.exit(0);
