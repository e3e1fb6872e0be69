/**
 * One grove server for the whole run, on a unix socket in a fresh store; its URL is
 * `inject("groveUrl")`. And a folder for the run's in-process stores (`inject("groveTmp")`,
 * test/clients.ts), removed when the run ends: a test file's own `process.on("exit")` does not
 * run in vitest's worker processes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import "vitest";
import type { TestProject } from "vitest/node";
import { startServer } from "./server.js";

declare module "vitest" {
	export interface ProvidedContext {
		groveUrl: string;
		groveTmp: string;
	}
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
	const tmp = mkdtempSync(join(tmpdir(), "grove-in-process-"));
	project.provide("groveTmp", tmp);
	const server = await startServer();
	project.provide("groveUrl", server.urls[0]!);
	return async () => {
		rmSync(tmp, { recursive: true, force: true });
		const code = await server.stop();
		if (code !== 0) throw new Error(`grove serve exited with ${code} after SIGTERM`);
	};
}
