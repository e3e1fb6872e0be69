/**
 * The platform examples of docs/openai-agents.md and docs/claude-agent-sdk.md run as a user's
 * project runs them: `node examples/X.mjs STORE`, importing `@grove/client` by its name (the
 * package's own exports, so dist/ is built first) and the platform's SDK from where it is
 * installed (`@openai/agents` is a dev dependency; the Claude Agent SDK is installed apart in
 * test/claude-agent-sdk, where the example is run from). Each one's closing line is checked.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const work = mkdtempSync(join(tmpdir(), "grove-examples-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function run(cmd: string, args: string[], cwd: string): string {
	const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout: 300_000 });
	if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
	return r.stdout;
}

beforeAll(() => {
	// The package's exports point at dist/.
	run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], root);
}, 300_000);

describe("the platform examples", () => {
	it("examples/openai_agents_quickstart.mjs: two turns, a branch from before the second, a question there", () => {
		const out = run(process.execPath, ["examples/openai_agents_quickstart.mjs", join(work, "openai")], root);
		expect(out.trim()).toBe("session quickstart: 4 items, 2 branches, last answer: '11 characters'");
	});

	it("examples/claude_agent_sdk_quickstart.mjs: a transcript appended, read, forked and listed by the SDK's helpers", () => {
		const project = join(root, "test/claude-agent-sdk");
		if (!existsSync(join(project, "node_modules/@anthropic-ai/claude-agent-sdk"))) {
			throw new Error("the Claude Agent SDK is not installed: (cd test/claude-agent-sdk && npm ci --omit=optional)");
		}
		// That project sees @grove/client as an installed package: a link to this one.
		const link = join(project, "node_modules/@grove/client");
		if (!existsSync(link)) {
			mkdirSync(dirname(link), { recursive: true });
			symlinkSync("../../../..", link);
		}
		const script = join(project, `.quickstart-${process.pid}.mjs`);
		copyFileSync(join(root, "examples/claude_agent_sdk_quickstart.mjs"), script);
		try {
			const out = run(process.execPath, [script, join(work, "claude")], project);
			expect(out.trim()).toBe("claude session: 4 messages, fork: 2 messages, 2 sessions listed");
		} finally {
			rmSync(script, { force: true });
		}
	});
});
