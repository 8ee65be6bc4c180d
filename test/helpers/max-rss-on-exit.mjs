// Preloaded (node --import) into a child process whose peak memory a test measures: at exit it
// writes its peak RSS in KiB to the file named by TEST_MAX_RSS_FILE.
import { writeFileSync } from "node:fs";
import process from "node:process";

process.on("exit", () => {
  const file = process.env.TEST_MAX_RSS_FILE;
  if (file) writeFileSync(file, String(process.resourceUsage().maxRSS));
});
