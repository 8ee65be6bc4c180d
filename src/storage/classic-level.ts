// The one module that imports classic-level: level-binding.ts loads the binding first, so that
// classic-level gets dacd's build of it where there is one (see there).
import "./level-binding.js";
export { ClassicLevel } from "classic-level";
