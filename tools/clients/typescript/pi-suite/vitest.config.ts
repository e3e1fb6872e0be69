/**
 * pi v0.83.0's own harness suite (packages/agent/test/harness) on grove: pi's config for that
 * suite, plus a resolveId plugin that redirects pi's memory-storage.ts and memory-repo.ts to the
 * drop-ins of ../pi-compat, and one grove server for the run (GROVE_URL).
 *
 * Run by ./run.sh with pi's own vitest from the pi checkout named by PI_CHECKOUT. The config
 * imports nothing from vitest, so the vitest of the pi checkout is the one that runs.
 */
import { fileURLToPath } from "node:url";
import { resolve } from "node:path";

const checkout = process.env.PI_CHECKOUT;
if (!checkout) throw new Error("PI_CHECKOUT must name a pi v0.83.0 checkout (npm ci --ignore-scripts done in it)");
const agent = resolve(checkout, "packages/agent");
const here = fileURLToPath(new URL(".", import.meta.url));

const redirects = new Map([
	[resolve(agent, "src/harness/session/memory-storage.ts"), resolve(here, "../pi-compat/memory-storage.ts")],
	[resolve(agent, "src/harness/session/memory-repo.ts"), resolve(here, "../pi-compat/memory-repo.ts")],
]);

interface ResolveContext {
	resolve(source: string, importer: string | undefined, options: Record<string, unknown>): Promise<{ id: string } | null>;
}

const dropIns = {
	name: "grove-pi-compat-redirect",
	enforce: "pre" as const,
	async resolveId(this: ResolveContext, source: string, importer: string | undefined, options: Record<string, unknown>) {
		const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
		if (!resolved) return null;
		return redirects.get(resolved.id.split("?")[0]!) ?? null;
	},
};

export default {
	root: agent,
	plugins: [dropIns],
	test: {
		globals: true,
		environment: "node",
		testTimeout: 30000,
		include: ["test/harness/**/*.test.ts"],
		globalSetup: [resolve(here, "global-setup.ts")],
	},
	resolve: {
		alias: [
			{ find: /^@earendil-works\/pi-agent-core$/, replacement: resolve(agent, "src/index.ts") },
			{ find: /^@earendil-works\/pi-ai$/, replacement: resolve(checkout, "packages/ai/src/index.ts") },
			{ find: /^@earendil-works\/pi-ai\/compat$/, replacement: resolve(checkout, "packages/ai/src/compat.ts") },
		],
	},
};
