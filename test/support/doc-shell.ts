/** The fenced languages whose blocks are shell commands a reader may paste. */
export const SHELL_LANGUAGES = ['bash', 'sh', 'shell'];

/** A fenced shell block of a Markdown page. */
export interface ShellBlock {
  /** The page, relative to the repository (`README.md`, `docs/operations.md`). */
  page: string;
  /** The line of the opening fence, from 1. */
  line: number;
  lang: string;
  /** The commands, without the fences (and without the fence's indentation). */
  code: string;
  /** The HTML comments right before the fence (blank lines between allowed), e.g. `tour` or `not-run: why`. */
  markers: string[];
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/;
const COMMENT = /^\s*<!--\s*([\s\S]*?)\s*-->\s*$/;

/** Every fenced block of `markdown` in a shell language, in order. */
export function shellBlocks(page: string, markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[end]))
      end++;
    if (SHELL_LANGUAGES.includes(lang)) {
      const markers: string[] = [];
      for (let j = i - 1; j >= 0; j--) {
        if (lines[j].trim() === '') continue;
        const comment = COMMENT.exec(lines[j]);
        if (!comment) break;
        markers.unshift(comment[1]);
      }
      const code = lines
        .slice(i + 1, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
        .join('\n');
      blocks.push({ page, line: i + 1, lang, code, markers });
    }
    i = end;
  }
  return blocks;
}

/**
 * The reason a block is not run (`<!-- not-run: needs a Kubernetes cluster -->` right before it), `''`
 * for a `not-run` marker without one, or undefined: the block runs.
 */
export function notRunReason(block: ShellBlock): string | undefined {
  const marker = block.markers.find((text) => /^not-run\b/.test(text));
  return marker === undefined ? undefined : marker.replace(/^not-run:?/, '').trim();
}

/** `page:line`, the name a block goes by in the test's output. */
export const blockName = (block: ShellBlock): string => `${block.page}:${block.line}`;

/** A word quoted for bash. */
const quoted = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * A bash script that runs `script` with the variables earlier blocks of the same chain left in
 * `stateFile`, then writes its own variables (theirs included) back there for the next block:
 * blocks of a page run one after the other as if typed into one terminal, yet each is a test of its
 * own. `set -euo pipefail` first, so that any failing command (or an unset variable) fails the block.
 */
export function chainedScript(script: string, stateFile: string, prelude = ''): string {
  const state = quoted(stateFile);
  return [
    'set -euo pipefail',
    '__doc_known=$(compgen -v)',
    `if [ -f ${state} ]; then source ${state}; fi`,
    prelude,
    script,
    // the variables set since the shell started (the environment's and bash's own left out)
    `__doc_new=$(compgen -v | grep -vxF -f <(printf '%s\\n' "$__doc_known") \\`,
    `  | grep -vE '^(__doc_.*|BASH_.*|PIPESTATUS|REPLY|MAPFILE|OPTARG|OPTIND|COLUMNS|LINES|_)$' || true)`,
    `: > ${state}`,
    `if [ -n "$__doc_new" ]; then declare -p $__doc_new > ${state}; fi`,
    '',
  ].join('\n');
}
