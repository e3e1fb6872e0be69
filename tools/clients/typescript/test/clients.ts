/**
 * The client the transport-neutral tests use: a client of the run's `grove serve`
 * (`inject("groveUrl")`), or, with `GROVE_TRANSPORT=in-process`, of a store opened in this
 * process by the native addon (`openStore`), one per test file, in the run's folder that
 * test/global-setup.ts removes at the end. The same tests run on both (tools/test-all.sh runs
 * them twice).
 */
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { inject } from "vitest";
import { GroveClient } from "../src/client.js";
import { openStore } from "../src/native.js";

/** Whether this run's clients are in-process. */
export const inProcess = process.env.GROVE_TRANSPORT === "in-process";

let dir: string | undefined;

/** The tests' store: `unix:SOCKET` of the run's server, or `in-process:DIR` (as `GROVE_URL` takes it). */
export function testUrl(): string {
	if (!inProcess) return inject("groveUrl");
	if (dir === undefined) {
		dir = join(mkdtempSync(join(inject("groveTmp"), "file-")), "store");
	}
	return `in-process:${dir}`;
}

/** A client of the tests' store, named `name` when given (`Grove-Client`). */
export function testClient(name?: string): GroveClient {
	const url = testUrl();
	if (!inProcess) return new GroveClient({ url, name });
	return openStore(url.slice("in-process:".length), { name, fallback: "error" });
}
