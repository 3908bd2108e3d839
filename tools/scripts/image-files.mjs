#!/usr/bin/env node
// The files each app's image is made of, chosen in one place: apps/server/Dockerfile and apps/worker/Dockerfile run
// this script, and the image steps test (apps/worker/test/container-image.e2e-spec.ts) runs the same one, since no
// Docker daemon runs where the tests do.
//
//   node tools/scripts/image-files.mjs manifests DEST
//     the root package.json, package-lock.json and every workspace's package.json, at their paths: all `npm ci` needs
//     (it checks the lockfile against every workspace), so the dependency layer is rebuilt only when one of them changes.
//   node tools/scripts/image-files.mjs built APP DEST
//     what APP runs from once built: its dist, the dist of every library (libs/*, so a new library needs no Dockerfile
//     change), the Hub's for the server (it serves it), and the setup's run signing key script for the server image.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const APPS = ['server', 'worker'];

/** The workspace folders the root package.json names (`apps/*`, `bench`...): each that holds a package.json. */
export const workspaceFolders = (root) => {
  const { workspaces = [] } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    if (!existsSync(join(root, parent))) return [];
    return readdirSync(join(root, parent))
      .map((name) => `${parent}/${name}`)
      .filter((folder) => statSync(join(root, folder)).isDirectory());
  }).filter((folder) => existsSync(join(root, folder, 'package.json')));
};

const copy = (root, dest, path) => {
  mkdirSync(dirname(join(dest, path)), { recursive: true });
  // Build bookkeeping is no use at run time.
  cpSync(join(root, path), join(dest, path), { recursive: true, filter: (source) => !source.endsWith('.tsbuildinfo') });
};

export const copyManifests = (root, dest) => {
  const files = ['package.json', 'package-lock.json', ...workspaceFolders(root).map((folder) => `${folder}/package.json`)];
  for (const file of files) copy(root, dest, file);
  return files;
};

export const copyBuilt = (root, app, dest) => {
  if (!APPS.includes(app)) throw new Error(`No image for "${app}": ${APPS.join(' or ')}.`);
  const appDist = `apps/${app}/dist`;
  if (!existsSync(join(root, appDist, 'main.js'))) throw new Error(`${appDist}/main.js is missing: build first (npx nx run ${app}:build).`);
  const libs = workspaceFolders(root)
    .filter((folder) => folder.startsWith('libs/'))
    .map((folder) => `${folder}/dist`);
  const missing = libs.filter((dist) => !existsSync(join(root, dist)));
  if (missing.length > 0) throw new Error(`Not built: ${missing.join(', ')}.`);
  const extra = app === 'server' ? ['apps/hub/dist', 'tools/scripts/run-signing-keys.mjs'].filter((path) => existsSync(join(root, path))) : [];
  const paths = [appDist, ...libs, ...extra];
  for (const path of paths) copy(root, dest, path);
  return paths;
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const [what, ...rest] = process.argv.slice(2);
  const root = process.cwd();
  try {
    if (what === 'manifests' && rest.length === 1) {
      console.log(`manifests: ${copyManifests(root, rest[0]).length} files`);
    } else if (what === 'built' && rest.length === 2) {
      console.log(`built: ${copyBuilt(root, rest[0], rest[1]).join(', ')}`);
    } else {
      console.error('Usage: node tools/scripts/image-files.mjs manifests DEST | built <server|worker> DEST');
      process.exit(2);
    }
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
