/**
 * The HTML view in a real browser (chromium, headless, test/browser.ts): `grove export --html` files
 * of a session with a side branch, labels, a branch summary and a compaction, of every pi-oracle
 * fixture, of 100,000 entries and of a 10,000-deep chain; and `GET /view` of a `grove serve` on TCP
 * with a token. The context the page shows is compared with `grove context --from ID --json` and
 * with the server's context route (docs/cli.md, docs/api.md, docs/design.md "Looking at it").
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { GroveClient } from "../src/client.js";
import { browserLog, findChromium, launchChromium } from "./browser.js";
import { groveBin, type RunningServer, startServer } from "./server.js";

// What the functions given to page.evaluate see of the page (this project's lib has no DOM).
interface PageElement {
	textContent: string | null;
	scrollTop: number;
	scrollHeight: number;
	open: boolean;
	getAttribute(name: string): string | null;
}
declare const document: {
	getElementById(id: string): PageElement | null;
	querySelectorAll(selector: string): ArrayLike<PageElement>;
};
declare const window: {
	groveView: {
		view: { nodes: { id: string }[]; parent: Int32Array; leaf: number };
		computeContext(id: string): unknown;
	};
};

const fixtures = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../tests/fixtures/pi-oracle");
/** A message that tries to end the page's data element and run a script of its own. */
const BREAKOUT = "</script><script>alert(1)</script><!--<script> \u2028\u2029";
const TOKEN = "view-test-token-0123456789";

let work: string;
let store: string;
let browser: Browser | undefined;
let server: RunningServer;
let client: GroveClient;
let httpUrl: string;

/** Runs `grove --store STORE --durability none ARGS`; its stdout. */
function grove(args: string[], input?: string): string {
	const r = spawnSync(groveBin(), ["--store", store, "--durability", "none", ...args], {
		input: input ?? "",
		encoding: "utf8",
		maxBuffer: 1 << 30,
	});
	if (r.status !== 0) throw new Error(`grove ${args.join(" ")} exited ${r.status ?? r.signal}: ${r.stderr}`);
	return r.stdout;
}

function groveJson(args: string[], input?: string): any {
	return JSON.parse(grove(args, input));
}

/** `grove context SESSION --from ID --json`, parsed. */
function groveContext(sid: string, id: string): unknown {
	return groveJson(["context", sid, "--from", id, "--json"]);
}

/** Exports SESSION as HTML; the file's URL. */
function exportHtml(sid: string, name: string): string {
	const file = join(work, `${name}.html`);
	grove(["export", sid, "--html", "-o", file]);
	return pathToFileURL(file).href;
}

interface Story {
	first: string;
	answer: string;
	side: string;
	summary: string;
	kept: string;
	compaction: string;
	breakout: string;
	nullContent: string;
	leaf: string;
}

/** A session with a side branch, a branch summary, a label, settings and a compaction. */
function buildStory(): Story {
	const header = join(work, "story.jsonl");
	writeFileSync(header, `${JSON.stringify({ type: "session", version: 3, id: "story", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/tmp/story" })}\n`);
	grove(["import", header]);
	const append = (entry: object): string => groveJson(["append", "story", "--json"], JSON.stringify(entry)).id;
	const user = (text: string) => append({ role: "user", content: text, timestamp: 1767225600000 });
	const assistant = (text: string) =>
		append({ role: "assistant", content: [{ type: "text", text }], provider: "anthropic", model: "claude", timestamp: 1767225600001 });
	const first = user("hello");
	append({ type: "thinking_level_change", thinkingLevel: "high" });
	const answer = assistant("hi");
	user("try one way");
	const side = assistant("one way");
	const summary = groveJson(["navigate", "story", answer, "--summary", "tried one way", "--json"]).summaryEntryId;
	grove(["label", "story", first, "start"]);
	append({ type: "active_tools_change", activeToolNames: ["read", "bash"] });
	const kept = user("try another way");
	assistant("another way");
	const compaction = append({ type: "compaction", summary: "compacted so far", firstKeptEntryId: kept, tokensBefore: 1234 });
	const breakout = user(BREAKOUT);
	const nullContent = append({ role: "assistant", content: null, provider: "openai", model: "gpt", timestamp: 1767225600002 });
	const leaf = user("last");
	return { first, answer, side, summary, kept, compaction, breakout, nullContent, leaf };
}

let story: Story;

beforeAll(async () => {
	work = mkdtempSync(join(tmpdir(), "grove-view-"));
	store = join(work, "store");
	story = buildStory();
	server = await startServer({
		args: (dir) => {
			const tokenFile = `${dir}.token`;
			writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
			return ["--socket", join(dir, "grove.sock"), "--listen", "127.0.0.1:0", "--token-file", tokenFile];
		},
		expectedListeners: 2,
	});
	httpUrl = server.urls.find((u) => u.startsWith("http://"))!;
	client = new GroveClient({ url: httpUrl, token: TOKEN });
	await client.importSession(grove(["export", "story"]));
	// Operations on the server's copy for its timeline: the leaf to the side branch and back,
	// and a label; the entries and the leaf stay those of the CLI's copy.
	await client.setLeaf("story", story.side);
	await client.setLeaf("story", story.leaf);
	await client.setLabel("story", story.kept, "kept from here");
	await client.setLeaf("story", story.leaf); // the label entry became the leaf
}, 600_000);

afterAll(async () => {
	client?.close();
	if (server) expect(await server.stop()).toBe(0);
	if (work) rmSync(work, { recursive: true, force: true });
});

/**
 * The test's browser, launched on first use: without chromium every test that needs it fails (with
 * test/browser.ts's message saying how to install it), none is skipped. Each test has a browser of
 * its own, closed after it, so a browser that dies fails one test, not the ones after it.
 */
async function theBrowser(): Promise<Browser> {
	browser ??= await launchChromium();
	return browser;
}

afterEach(async () => {
	const used = browser;
	browser = undefined;
	if (used === undefined) return;
	const died = !used.isConnected();
	await used.close();
	if (died) throw new Error(`chromium died during the test; what it printed last:\n${browserLog(used)}`);
});

it("finds chromium", () => {
	expect(findChromium()).not.toBe("");
});

it("says how a browser that died ended", async () => {
	const own = await launchChromium();
	const pid = Number(/chromium pid=(\d+)/.exec(browserLog(own))?.[1]);
	expect(pid).toBeGreaterThan(0);
	const closed = new Promise<void>((done) => own.once("disconnected", () => done()));
	process.kill(pid, "SIGKILL");
	await closed;
	expect(own.isConnected()).toBe(false);
	await vi.waitFor(() => expect(browserLog(own)).toContain("signal=SIGKILL"));
});

interface Opened {
	page: Page;
	/** Uncaught exceptions and console errors. */
	errors: string[];
	/** Every URL the page requested. */
	requests: string[];
	/** Every alert, confirm or prompt. */
	dialogs: string[];
}

/** Opens `url` in a new page and waits for `ready` (a selector; default: a tree row). */
async function open(url: string, timeout = 60_000, ready = ".row"): Promise<Opened> {
	const page = await (await theBrowser()).newPage({ viewport: { width: 1280, height: 800 } });
	// A wait that fails says which; the test's own timeout would not.
	page.setDefaultTimeout(60_000);
	const opened: Opened = { page, errors: [], requests: [], dialogs: [] };
	page.on("pageerror", (e) => opened.errors.push(String(e)));
	page.on("console", (m) => {
		if (m.type() === "error") opened.errors.push(m.text());
	});
	page.on("request", (r) => opened.requests.push(r.url()));
	page.on("dialog", (d) => {
		opened.dialogs.push(d.message());
		void d.dismiss();
	});
	await page.goto(url, { timeout });
	await page.waitForSelector(ready, { state: "attached", timeout });
	return opened;
}

/** Clicks the row of entry `id` (it must be drawn). */
async function clickRow(page: Page, id: string): Promise<void> {
	await page.click(`.row[data-id="${id}"]`);
}

/** The context the page shows once it is shown for `id`, read from its JSON box. */
async function shownContext(page: Page, id: string): Promise<unknown> {
	await page.waitForFunction((short) => {
		const count = document.getElementById("context-count")?.textContent ?? "";
		return document.getElementById("context-at")?.textContent === short && count !== "" && !count.includes("…");
	}, id.slice(0, 8));
	if (!(await page.locator("#context-raw").evaluate((d) => (d as unknown as PageElement).open))) {
		await page.click("#context-raw > summary");
	}
	await page.waitForFunction(() => (document.getElementById("context-json")?.textContent ?? "") !== "");
	return JSON.parse((await page.textContent("#context-json")) ?? "");
}

describe("grove export --html", () => {
	it("draws the tree: the active path, the leaf, labels, the branch summary and the compaction", async () => {
		const { page, errors, requests, dialogs } = await open(exportHtml("story", "story"));
		const rows = await page.locator(".row").evaluateAll((els) =>
			els.map((e) => ({ id: e.getAttribute("data-id"), cls: e.getAttribute("class") ?? "", text: e.textContent ?? "" })),
		);
		const tree = groveJson(["tree", "story", "--json"]);
		let count = 0;
		const stack = [...tree];
		while (stack.length > 0) {
			const node = stack.pop();
			count++;
			stack.push(...node.children);
		}
		expect(rows).toHaveLength(count);
		const row = (id: string) => rows.find((r) => r.id === id)!;
		expect(row(story.leaf).cls).toContain("leaf");
		expect(rows.filter((r) => r.cls.split(" ").includes("leaf"))).toHaveLength(1);
		expect(row(story.compaction).cls).toContain("k-compaction");
		expect(row(story.compaction).cls).toContain("active");
		expect(row(story.summary).cls).toContain("k-branch_summary");
		expect(row(story.summary).text).toContain("tried one way");
		expect(row(story.side).cls).not.toContain("active");
		expect(row(story.first).text).toContain("start");
		expect(await page.locator(`.row[data-id="${story.first}"] .label`).textContent()).toBe("start");
		// The branch point (the answer: the side branch and the summary hang from it) can be folded.
		await page.click(`.row[data-id="${story.answer}"] .twisty`);
		expect(await page.locator(`.row[data-id="${story.side}"]`).count()).toBe(0);
		await page.click(`.row[data-id="${story.answer}"] .twisty`);
		expect(await page.locator(`.row[data-id="${story.side}"]`).count()).toBe(1);
		expect(await page.title()).toContain("story");
		await page.close();
		expect(errors).toEqual([]);
		expect(dialogs).toEqual([]);
		// Self-contained: the file is the only thing the page loaded.
		expect(new Set(requests)).toEqual(new Set([exportHtmlUrl("story")]));
	});

	it("shows each clicked entry and the context grove builds at it", async () => {
		const { page, errors, dialogs } = await open(exportHtml("story", "story"));
		const ids = [story.first, story.side, story.summary, story.kept, story.compaction, story.breakout, story.nullContent, story.leaf];
		for (const id of ids) {
			await clickRow(page, id);
			expect(await shownContext(page, id), `context at ${id}`).toEqual(groveContext("story", id));
			const entry = groveJson(["show", "story", id, "--json"]).entry;
			expect(JSON.parse((await page.textContent("#entry-json")) ?? "")).toEqual(entry);
		}
		// After the compaction: its summary, the kept entries, what follows; the settings survive it.
		await clickRow(page, story.leaf);
		const atLeaf = (await shownContext(page, story.leaf)) as { messages: { role: string }[]; model: unknown; thinkingLevel: string; activeToolNames: string[] };
		expect(atLeaf.messages[0]!.role).toBe("compactionSummary");
		expect(atLeaf.model).toEqual({ provider: "openai", modelId: "gpt" });
		expect(atLeaf.thinkingLevel).toBe("high");
		expect(atLeaf.activeToolNames).toEqual(["read", "bash"]);
		expect(await page.textContent("#context-settings")).toContain("openai/gpt");
		// The breakout text is shown as text and ran nothing.
		await clickRow(page, story.breakout);
		expect(await page.textContent("#entry-json")).toContain("</script><script>alert(1)</script>");
		expect(dialogs).toEqual([]);
		expect(errors).toEqual([]);
		await page.close();
	});

	it("computes the context grove builds at every entry of Claude Code's and Codex's transcripts and pi's newer files", async () => {
		// The tools' own rules (docs/format.md, "Foreign transcripts"), ported to the page: the
		// page's context at each entry equals `grove context --from ID --json`.
		const foreign = resolve(fixtures, "../foreign");
		const imported: { session: string }[] = [];
		for (const dir of ["claude-code/-home-user-work-demo", "claude-code/-home-user-work-tools", "codex", "pi-lanes", "pi-commits"]) {
			for (const line of grove(["import", join(foreign, dir), "--json"]).trim().split("\n")) imported.push(JSON.parse(line));
		}
		const page = await (await theBrowser()).newPage();
		const errors: string[] = [];
		page.on("pageerror", (e) => errors.push(String(e)));
		let compared = 0;
		let nonEmpty = 0;
		for (const [k, { session }] of imported.entries()) {
			await page.goto(exportHtml(session, `foreign-${k}`));
			await page.waitForFunction(() => document.getElementById("status")?.textContent !== "");
			const ids: string[] = await page.evaluate(() => window.groveView.view.nodes.map((n) => n.id));
			const computed: unknown[] = JSON.parse(
				await page.evaluate((want) => JSON.stringify(want.map((id) => window.groveView.computeContext(id))), ids),
			);
			for (const [i, id] of ids.entries()) {
				const expected = groveContext(session, id) as { messages: unknown[] };
				expect(computed[i], `${session}: context at ${id}`).toEqual(expected);
				compared++;
				if (expected.messages.length > 0) nonEmpty++;
			}
		}
		await page.close();
		expect(errors).toEqual([]);
		expect(imported.length).toBe(8);
		expect(compared).toBeGreaterThan(50);
		expect(nonEmpty).toBeGreaterThan(40);
	}, 300_000);

	it("computes the context grove's server builds at the entries of every pi-oracle fixture", async () => {
		const files = readdirSync(fixtures).filter((f) => f.endsWith(".jsonl"));
		let sessions = 0;
		let compared = 0;
		const page = await (await theBrowser()).newPage();
		page.setDefaultTimeout(120_000);
		const errors: string[] = [];
		page.on("pageerror", (e) => errors.push(String(e)));
		for (const file of files) {
			// Fixtures grove refuses (torn, malformed, missing header...) or that share a session id
			// with one already imported are not sessions here. The server gets the session as the
			// CLI's store has it (an import of an old version makes up ids).
			let sid: string;
			try {
				sid = groveJson(["import", join(fixtures, file), "--json"]).session;
			} catch {
				continue;
			}
			await client.importSession(grove(["export", sid]));
			sessions++;
			await page.goto(exportHtml(sid, `fixture-${sessions}`));
			await page.waitForFunction(() => document.getElementById("status")?.textContent !== "");
			const ids: string[] = await page.evaluate(() => window.groveView.view.nodes.map((n) => n.id));
			// Every entry of a small session; of a larger one, 60 spread over it.
			const step = Math.max(1, Math.ceil(ids.length / 60));
			const sample = ids.filter((_, k) => k % step === 0 || k === ids.length - 1);
			const computed: unknown[] = JSON.parse(
				await page.evaluate((want) => JSON.stringify(want.map((id) => window.groveView.computeContext(id))), sample),
			);
			const expected = await Promise.all(sample.map((leaf) => client.context(sid, { leaf })));
			for (let k = 0; k < sample.length; k++) {
				expect(computed[k], `${file}: context at ${sample[k]}`).toEqual(expected[k]);
				compared++;
			}
		}
		await page.close();
		expect(errors).toEqual([]);
		expect(sessions).toBeGreaterThan(140);
		expect(compared).toBeGreaterThan(4000);
	}, 600_000);

	it("opens a 10,000-deep chain and a 100,000-entry session, deepest entries clickable", async () => {
		// A linear session: one chain 10,000 entries deep.
		const deep = groveJson(["gen", "--entries", "10000", "--seed", "7", "--import", "--json"]).session;
		const deepPage = await open(exportHtml(deep, "deep"), 120_000);
		const deepest = await deepPage.page.evaluate(() => {
			const v = window.groveView.view;
			return v.nodes[v.nodes.length - 1]!.id;
		});
		await deepPage.page.evaluate(() => {
			const tree = document.getElementById("tree")!;
			tree.scrollTop = tree.scrollHeight;
		});
		await deepPage.page.waitForSelector(`.row[data-id="${deepest}"]`);
		await clickRow(deepPage.page, deepest);
		const expected = groveContext(deep, deepest) as { messages: unknown[] };
		expect(expected.messages.length).toBeGreaterThan(5000);
		expect(await shownContext(deepPage.page, deepest)).toEqual(expected);
		await deepPage.page.close();
		expect(deepPage.errors).toEqual([]);

		// A bushy session with compactions: its deepest entry (on any branch) by "go to".
		const big = groveJson(["gen", "--entries", "100000", "--branches", "50", "--compaction-every", "1000", "--import", "--json"]).session;
		const bigPage = await open(exportHtml(big, "big"), 180_000);
		expect(await bigPage.page.textContent("#status")).toContain("100000 entries");
		const target = await bigPage.page.evaluate(() => {
			const v = window.groveView.view;
			const depth = new Int32Array(v.nodes.length).fill(-1);
			let best = 0;
			for (let i = 0; i < v.nodes.length; i++) {
				// Depths by a loop up to the nearest ancestor whose depth is known.
				const chain: number[] = [];
				let at = i;
				while (at >= 0 && depth[at] === -1) {
					chain.push(at);
					at = v.parent[at]!;
				}
				let d = at >= 0 ? depth[at]! : -1;
				for (let k = chain.length - 1; k >= 0; k--) depth[chain[k]!] = ++d;
				if (depth[i]! > depth[best]!) best = i;
			}
			return v.nodes[best]!.id;
		});
		await bigPage.page.fill("#goto", target);
		await bigPage.page.press("#goto", "Enter");
		await bigPage.page.waitForSelector(`.row[data-id="${target}"]`);
		await clickRow(bigPage.page, target);
		expect(await shownContext(bigPage.page, target)).toEqual(groveContext(big, target));
		await bigPage.page.close();
		expect(bigPage.errors).toEqual([]);
	}, 600_000);
});

/** The URL `exportHtml(…, name)` wrote. */
function exportHtmlUrl(name: string): string {
	return pathToFileURL(join(work, `${name}.html`)).href;
}

describe("GET /view", () => {
	it("is served without the token, and the data only with it", async () => {
		const page = await fetch(`${httpUrl}/view`);
		expect(page.status).toBe(200);
		expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
		expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
		expect(await page.text()).toContain('{"mode":"server"}');
		expect((await fetch(`${httpUrl}/v1/sessions`)).status).toBe(401);
		// Without a token the page says how to give it.
		const opened = await (await theBrowser()).newPage();
		await opened.goto(`${httpUrl}/view`);
		await opened.waitForSelector("#error:not([hidden])");
		expect(await opened.textContent("#error")).toContain("#token=");
		await opened.close();
	});

	it("lists the sessions, draws a tree, shows contexts and the operation timeline", async () => {
		const { page, errors, requests } = await open(`${httpUrl}/view#token=${TOKEN}`, 60_000, "#sessions option[value=story]");
		await page.selectOption("#sessions", "story");
		await page.waitForSelector(".row");
		expect(page.url()).toContain("session=story");
		// Opens at the leaf; then an entry on the side branch and one after the compaction.
		expect(await shownContext(page, story.leaf)).toEqual(groveContext("story", story.leaf));
		for (const id of [story.side, story.summary, story.kept]) {
			await clickRow(page, id);
			const shown = await shownContext(page, id);
			expect(shown, `context at ${id}`).toEqual(groveContext("story", id));
			expect(shown).toEqual(await client.context("story", { leaf: id }));
		}
		// The operation timeline: every operation, newest first; one shows its leaf when clicked.
		const ops = await client.operations("story");
		expect(ops.map((o) => o.kind)).toEqual(["move", "label", "move", "move", "import"]);
		const shownOps = await page.locator("#ops li").evaluateAll((els) => els.map((e) => Number(e.getAttribute("value"))));
		expect(shownOps).toEqual(ops.map((o) => o.op));
		expect(await page.locator("#ops li").nth(1).textContent()).toContain("label");
		const toSide = ops.find((o) => o.kind === "move" && o.leafAfter === story.side)!;
		expect(toSide).toBeDefined();
		await page.click(`#ops li[value="${toSide.op}"]`);
		expect(await shownContext(page, story.side)).toEqual(groveContext("story", story.side));
		expect(await page.locator(`.row[data-id="${story.kept}"] .label`).textContent()).toBe("kept from here");
		// Every data fetch went to the server's routes; the token never in a URL.
		const fetched = requests.filter((u) => !u.startsWith(`${httpUrl}/view`));
		expect(fetched.length).toBeGreaterThan(4);
		for (const u of fetched) expect(u.startsWith(`${httpUrl}/v1/`), u).toBe(true);
		for (const u of requests) expect(u.split("#")[0]).not.toContain(TOKEN);
		const shot = join(work, "view.png");
		await page.screenshot({ path: shot, fullPage: true });
		const png = readFileSync(shot);
		expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
		expect(statSync(shot).size).toBeGreaterThan(10_000);
		await page.close();
		expect(errors).toEqual([]);
	});
});
