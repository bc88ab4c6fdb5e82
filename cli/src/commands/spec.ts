import type { Readable, Writable } from 'node:stream';

// What a command declares (for parsing and --help) and what it receives.

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** Placeholder shown in help, e.g. `<int>`. */
  value?: string;
  description: string;
}

export interface CommandSpec {
  name: string;
  /** Positional arguments, e.g. `['<function>']`; all are required. */
  args: string[];
  summary: string;
  /** Extra help paragraphs. */
  details?: string[];
  options: Record<string, OptionSpec>;
  /** Whether the command prints a record and so takes --output json. */
  json: boolean;
  /** Whether the command talks to a server (takes --url and --token). */
  remote: boolean;
  examples: string[];
  load(): Promise<{ run(ctx: CommandContext): Promise<number | void> }>;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface Terminal {
  stdout: Writable & { isTTY?: boolean; columns?: number };
  stderr: Writable & { isTTY?: boolean };
  stdin: Readable & { isTTY?: boolean; setRawMode?: (mode: boolean) => unknown };
  env: Record<string, string | undefined>;
  cwd: string;
}

export interface CommandContext {
  spec: CommandSpec;
  args: string[];
  options: OptionValues;
  output: 'text' | 'json';
  io: Terminal;
  /** Colours for stdout (stderr decides its own). */
  color: boolean;
  /** The client for the resolved connection; resolving reads env, flags and files once. */
  client(timeoutMs?: number): Promise<import('../api/client.ts').ApiClient>;
}
