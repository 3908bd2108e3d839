import * as ts from 'typescript';

/** The repository's line width; it has no formatter, so the generator writes code already formatted. */
export const LINE_WIDTH = 140;

export type ImportName = { name: string; isType?: boolean };

const parse = (fileName: string, source: string) => ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);

const splice = (source: string, start: number, end: number, text: string) => source.slice(0, start) + text + source.slice(end);

const lineStartOf = (source: string, position: number) => source.lastIndexOf('\n', position - 1) + 1;

const indentOf = (source: string, position: number) => /^[ \t]*/.exec(source.slice(lineStartOf(source, position)))?.[0] ?? '';

const specifierOf = (declaration: ts.ImportDeclaration) => (declaration.moduleSpecifier as ts.StringLiteral).text;

const isRelative = (specifier: string) => specifier.startsWith('.');

const commonPrefixLength = (left: string, right: string) => {
  let length = 0;
  while (length < left.length && left[length] === right[length]) length += 1;
  return length;
};

/** Values first, then `type` names; each group in code-point order, as the repository writes them. */
const comesBefore = (left: ImportName, right: ImportName) =>
  Boolean(left.isType) !== Boolean(right.isType) ? !left.isType : left.name < right.name;

const renderImport = (elements: readonly string[], specifier: string, multiline: boolean) => {
  const single = `import { ${elements.join(', ')} } from '${specifier}';`;
  if (!multiline && single.length <= LINE_WIDTH) return single;
  return `import {\n${elements.map((element) => `  ${element},`).join('\n')}\n} from '${specifier}';`;
};

/**
 * Adds named imports from a module: merged into its existing value import, each name in its sorted
 * place, or as a new import declaration next to its neighbours. Names already imported are left alone.
 */
export const addNamedImports = (fileName: string, source: string, specifier: string, names: readonly ImportName[]): string => {
  const sourceFile = parse(fileName, source);
  const imports = sourceFile.statements.filter(ts.isImportDeclaration);
  const existing = imports.find(
    (declaration) =>
      specifierOf(declaration) === specifier &&
      !declaration.importClause?.isTypeOnly &&
      declaration.importClause?.namedBindings &&
      ts.isNamedImports(declaration.importClause.namedBindings),
  );
  const bindings = existing?.importClause?.namedBindings;
  if (existing && bindings && ts.isNamedImports(bindings)) {
    const elements = bindings.elements.map((element) => ({
      name: element.name.text,
      isType: element.isTypeOnly,
      text: element.getText(sourceFile),
    }));
    for (const added of names) {
      if (elements.some((element) => element.name === added.name)) continue;
      const sameKind = (element: { isType?: boolean }) => Boolean(element.isType) === Boolean(added.isType);
      const before = elements.findIndex((element) => sameKind(element) && comesBefore(added, element));
      const lastOfKind = elements.map(sameKind).lastIndexOf(true);
      const index = before >= 0 ? before : lastOfKind >= 0 ? lastOfKind + 1 : added.isType ? elements.length : 0;
      elements.splice(index, 0, { ...added, isType: Boolean(added.isType), text: added.isType ? `type ${added.name}` : added.name });
    }
    const multiline = existing.getText(sourceFile).includes('\n');
    const rendered = renderImport(
      elements.map((element) => element.text),
      specifier,
      multiline,
    );
    return splice(source, existing.getStart(sourceFile), existing.getEnd(), rendered);
  }

  const sorted = [...names].sort((left, right) => (comesBefore(left, right) ? -1 : 1));
  const declaration = renderImport(
    sorted.map((added) => (added.isType ? `type ${added.name}` : added.name)),
    specifier,
    false,
  );
  // Next to its closest relatives (`@naalya/access` by `@naalya/agent-tools`), in order among them.
  const sameKind = imports.filter((candidate) => isRelative(specifierOf(candidate)) === isRelative(specifier));
  const closeness = (candidate: ts.ImportDeclaration) => commonPrefixLength(specifierOf(candidate), specifier);
  const closest = Math.max(0, ...sameKind.map(closeness));
  const relatives = sameKind.filter((candidate) => closeness(candidate) === closest);
  const next = relatives.find((candidate) => specifierOf(candidate) > specifier);
  if (next) return splice(source, next.getStart(sourceFile), next.getStart(sourceFile), `${declaration}\n`);
  const previous = relatives.at(-1) ?? (isRelative(specifier) ? imports.at(-1) : undefined);
  if (previous) return splice(source, previous.getEnd(), previous.getEnd(), `\n${declaration}`);
  const first = imports[0];
  if (first) return splice(source, first.getStart(sourceFile), first.getStart(sourceFile), `${declaration}\n`);
  return `${declaration}\n${source}`;
};

const unwrap = (expression: ts.Expression): ts.Expression =>
  ts.isAsExpression(expression) || ts.isSatisfiesExpression(expression) || ts.isParenthesizedExpression(expression)
    ? unwrap(expression.expression)
    : expression;

/** Appends an element to the array literal a top-level `const` is initialised with, keeping its layout. */
export const appendToArray = (fileName: string, source: string, variableName: string, element: string): string => {
  const sourceFile = parse(fileName, source);
  const declaration = sourceFile.statements
    .filter(ts.isVariableStatement)
    .flatMap((statement) => [...statement.declarationList.declarations])
    .find((candidate) => ts.isIdentifier(candidate.name) && candidate.name.text === variableName);
  const array = declaration?.initializer && unwrap(declaration.initializer);
  if (!array || !ts.isArrayLiteralExpression(array)) {
    throw new Error(`${fileName}: ${variableName} is not a const array literal, so the generator cannot add ${element} to it.`);
  }
  const elements = array.elements;
  if (elements.some((existing) => existing.getText(sourceFile) === element)) return source;
  const closing = array.getEnd() - 1;
  if (elements.length === 0) return splice(source, closing, closing, element);

  const last = elements[elements.length - 1];
  if (array.getText(sourceFile).includes('\n')) {
    const indent = indentOf(source, last.getStart(sourceFile));
    const between = source.slice(last.getEnd(), closing);
    const comma = between.indexOf(',');
    const at = comma >= 0 ? last.getEnd() + comma + 1 : last.getEnd();
    return splice(source, at, at, `${comma >= 0 ? '' : ','}\n${indent}${element}${comma >= 0 ? ',' : ''}`);
  }
  const updated = splice(source, last.getEnd(), last.getEnd(), `, ${element}`);
  const lineStart = lineStartOf(updated, array.getStart(sourceFile));
  const lineEnd = updated.indexOf('\n', lineStart);
  if ((lineEnd < 0 ? updated.length : lineEnd) - lineStart <= LINE_WIDTH) return updated;
  const indent = indentOf(source, array.getStart(sourceFile));
  const items = [...elements.map((existing) => existing.getText(sourceFile)), element];
  return splice(source, array.getStart(sourceFile), array.getEnd(), `[\n${items.map((item) => `${indent}  ${item},`).join('\n')}\n${indent}]`);
};

/** The one class in a file decorated with the given decorator, e.g. `Controller`. */
export const findDecoratedClass = (fileName: string, source: string, decorator: string) => {
  const sourceFile = parse(fileName, source);
  const classes = sourceFile.statements
    .filter(ts.isClassDeclaration)
    .filter((declaration) =>
      (ts.getDecorators(declaration) ?? []).some(
        (candidate) =>
          ts.isCallExpression(candidate.expression) &&
          ts.isIdentifier(candidate.expression.expression) &&
          candidate.expression.expression.text === decorator,
      ),
    );
  if (classes.length !== 1) return undefined;
  const [declaration] = classes;
  const constructor = declaration.members.find(ts.isConstructorDeclaration);
  return {
    name: declaration.name?.text,
    start: declaration.getStart(sourceFile),
    members: declaration.members.map((member) => member.name?.getText(sourceFile)).filter(Boolean) as string[],
    /** Constructor parameters by type name, e.g. `ToolExecutor` to `executor`. */
    injected: new Map(
      (constructor?.parameters ?? []).flatMap((parameter) =>
        parameter.type && ts.isIdentifier(parameter.name) ? [[parameter.type.getText(sourceFile), parameter.name.text] as const] : [],
      ),
    ),
    closingBrace: declaration.getEnd() - 1,
  };
};

/** Inserts a member (already indented) before the closing brace of the file's decorated class. */
export const appendClassMember = (fileName: string, source: string, decorator: string, member: string): string => {
  const found = findDecoratedClass(fileName, source, decorator);
  if (!found) throw new Error(`${fileName}: expected exactly one @${decorator}() class.`);
  const before = source.slice(0, found.closingBrace).replace(/\s*$/, '');
  return `${before}\n\n${member}\n${source.slice(found.closingBrace)}`;
};

/**
 * Inserts a statement after the last top-level statement `isAnchor` accepts, or else just before
 * `fallbackBefore` (a position at the start of a line), separated the way the file already is.
 */
export const insertStatementAfterLast = (
  fileName: string,
  source: string,
  statement: string,
  isAnchor: (node: ts.Statement, sourceFile: ts.SourceFile) => boolean,
  fallbackBefore: number,
): string => {
  const sourceFile = parse(fileName, source);
  const anchor = sourceFile.statements.filter((node) => isAnchor(node, sourceFile)).at(-1);
  if (anchor) return splice(source, anchor.getEnd(), anchor.getEnd(), `\n${statement}`);
  return splice(source, fallbackBefore, fallbackBefore, `${statement}\n\n`);
};
