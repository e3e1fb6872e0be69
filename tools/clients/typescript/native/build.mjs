// Builds the native addon with napi-rs's CLI into native/ (grove.<platform>.node, index.cjs,
// index.d.ts): release by default; GROVE_NATIVE_DEBUG=1 builds the workspace's dev profile
// instead (the tests' build, minutes faster on a small machine).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const args = ["napi", "build", "--manifest-path", "native/Cargo.toml", "--platform", "--output-dir", "native", "--js", "index.cjs", "--dts", "index.d.ts"];
if (!process.env.GROVE_NATIVE_DEBUG) args.push("--release");
const run = spawnSync("npx", args, { cwd: `${here}/..`, stdio: "inherit" });
process.exit(run.status ?? 1);
