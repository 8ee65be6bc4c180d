/** The member's static facts: its labels, dacd's build, and the mode it runs in. */
import { Gauge } from "prom-client";
import { buildInfo } from "../../build-info.js";
import { PREFIX, type Registers } from "./family.js";

/** Labels of `dacd_info`. */
export const INFO_LABELS = ["profile", "chain", "member_key", "engine", "version"] as const;

type InfoLabel = (typeof INFO_LABELS)[number];
export type InfoLabels = Partial<Record<InfoLabel, string>>;

export function identityMetrics(registers: Registers, info: InfoLabels) {
  const m = {
    info: new Gauge({
      name: `${PREFIX}info`,
      help: "Constant 1, labelled with the member's static facts",
      labelNames: INFO_LABELS,
      registers,
    }),
    buildInfo: new Gauge({
      name: `${PREFIX}build_info`,
      help: "Constant 1, labelled with dacd's version, the commit it was built from and the Node.js version",
      labelNames: ["version", "commit", "node"],
      registers,
    }),
  };
  const build = buildInfo();
  m.buildInfo.set({ version: build.version, commit: build.commit, node: build.node }, 1);
  setInfo(m.info, info);
  const mode = new Gauge({
    name: `${PREFIX}mode`,
    help: "1 for the mode the member runs in, 0 for the other: active (posts) or shadow (signs, never posts)",
    labelNames: ["mode"],
    registers,
  });
  setMode(mode, "active");
  return { ...m, mode };
}

export type IdentityMetrics = ReturnType<typeof identityMetrics>;

/** Replaces the labels of the single `dacd_info` series. */
export function setInfo(info: Gauge<InfoLabel>, labels: InfoLabels): void {
  info.reset();
  info.set(labels, 1);
}

/** Sets `dacd_mode{mode="active"|"shadow"}`: 1 for this mode, 0 for the other. */
export function setMode(gauge: Gauge<"mode">, mode: "active" | "shadow"): void {
  gauge.set({ mode: "active" }, mode === "active" ? 1 : 0);
  gauge.set({ mode: "shadow" }, mode === "shadow" ? 1 : 0);
}
