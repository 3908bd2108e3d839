export { startModelSimulator, type ModelSimulator, type ModelSimulatorOptions, type RecordedRequest } from './server.js';
export { parseScript, Script, ScriptError, Turn, MAX_DELAY_MS, type ScriptInput, type TurnInput } from './script.js';
