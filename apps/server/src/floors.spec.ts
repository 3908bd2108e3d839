import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const SERVER = join(dirname(fileURLToPath(import.meta.url)), '..');
const eslint = new ESLint({ cwd: SERVER });

/** The floors rule's messages for `code` as if it were the file at `path` (under apps/server/src); the file need not exist. */
const floorErrors = async (path: string, code: string): Promise<string[]> => {
  const [result] = await eslint.lintText(code, { filePath: join(SERVER, 'src', path) });
  return result.messages.filter((message) => message.ruleId === 'floors/no-upward-import').map((message) => message.message);
};

describe('the server floors lint rule (npm run lint)', () => {
  // Loading the workspace's ESLint config (Nx, typescript-eslint) takes seconds on a busy machine: once, here.
  beforeAll(() => eslint.calculateConfigForFile(join(SERVER, 'src/main.ts')), 60_000);

  it.each([
    ['core imports the domain', 'app/core/auth/planted.ts', "import { StaffService } from '../../staff/staff.service.js';"],
    ['core imports the agent seam', 'app/core/database/planted.ts', "export { ToolExecutor } from '../../naalya-ai/tools/tool-executor.js';"],
    ['the domain imports the agent seam', 'app/departments/planted.ts', "import type { ToolPosture } from '../naalya-ai/tools/tool-posture.js';"],
    ['the domain imports the app module', 'app/staff/planted.ts', "const app = await import('../app.module.js');"],
    ['the agent seam imports the seed', 'app/naalya-ai/tools/planted.ts', "import { seedDemo } from '../../seed/demo-seed.js';"],
    ['production code imports test support', 'app/departments/planted.ts', "import { createTestApp } from '../../testing/test-app.js';"],
  ])('fails on a planted wrong-way import: %s', async (_, path, code) => {
    const errors = await floorErrors(path, code);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/floor above it|imports test code/);
  });

  it.each([
    ['the domain imports core', 'app/departments/planted.ts', "import { repo } from '../core/tenancy/tenant-context.js';"],
    ['the domain imports another domain', 'app/classes/planted.ts', "import { CampusService } from '../campuses/campus.service.js';"],
    ['the agent seam imports the domain and core', 'app/naalya-ai/tools/planted.ts', "import { DepartmentService } from '../../departments/department.service.js';\nimport { repo } from '../../core/tenancy/tenant-context.js';"],
    ['the app module imports every floor', 'app/planted.ts', "import { CoreModule } from './core/core.module.js';\nimport { NaalyaAiToolsModule } from './naalya-ai/tools/naalya-ai-tools.module.js';"],
    ['a test imports anything', 'app/core/auth/planted.integration-spec.ts', "import { createDepartmentFixture } from '../../naalya-ai/tools/fixtures/create-department.fixture.js';"],
  ])('lets a right-way import through: %s', async (_, path, code) => {
    expect(await floorErrors(path, code)).toEqual([]);
  });
});
