/** One grove server for the whole run, on a unix socket in a fresh store; its URL is `inject("groveUrl")`. */
import "vitest";
import type { TestProject } from "vitest/node";
import { startServer } from "./server.js";

declare module "vitest" {
	export interface ProvidedContext {
		groveUrl: string;
	}
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
	const server = await startServer();
	project.provide("groveUrl", server.urls[0]!);
	return async () => {
		const code = await server.stop();
		if (code !== 0) throw new Error(`grove serve exited with ${code} after SIGTERM`);
	};
}
