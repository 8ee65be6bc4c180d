/**
 * A password typed at the terminal, not echoed. The prompt goes to stderr so that stdout keeps
 * only the command's answer (keygen's address).
 */
import { DacdError } from "../errors.js";

export interface PromptStreams {
  readonly input: NodeJS.ReadStream;
  readonly output: NodeJS.WritableStream;
}

const defaultStreams = (): PromptStreams => ({ input: process.stdin, output: process.stderr });

/** Whether there is a terminal to ask on. */
export function canPrompt(streams: PromptStreams = defaultStreams()): boolean {
  return streams.input.isTTY === true;
}

/** Asks for a password twice; they must match and not be empty. */
export async function promptNewPassword(streams: PromptStreams = defaultStreams()): Promise<string> {
  const first = await promptHidden("New keystore password: ", streams);
  if (first.length === 0) throw new DacdError("USAGE", "keygen: the password is empty");
  const second = await promptHidden("Repeat the password: ", streams);
  if (first !== second) throw new DacdError("USAGE", "keygen: the two passwords differ");
  return first;
}

/** One line read in raw mode (no echo); Ctrl-C or Ctrl-D gives up. */
export function promptHidden(prompt: string, { input, output }: PromptStreams): Promise<string> {
  // Echo off before the prompt shows: what is typed after it is never displayed.
  input.setRawMode(true);
  output.write(prompt);
  input.resume();
  input.setEncoding("utf8");
  let typed = "";
  return new Promise<string>((resolve, reject) => {
    const finish = (err?: DacdError): void => {
      input.off("data", onData);
      input.setRawMode(false);
      input.pause();
      output.write("\n");
      if (err) reject(err);
      else resolve(typed);
    };
    const onData = (chunk: string): void => {
      for (const c of chunk) {
        if (c === "\r" || c === "\n") return finish();
        if (c === "\u0003" || c === "\u0004")
          return finish(new DacdError("USAGE", "keygen: no password given"));
        if (c === "\u007f" || c === "\b") typed = typed.slice(0, -1);
        else typed += c;
      }
    };
    input.on("data", onData);
  });
}
