// The runner panel's one state object and the fixed vocabularies it is read with; every module of the panel reads and
// writes run, model, task and source-browser state here.
import { currentLang } from './lang.js';

export const STAGES = ['load', 'decision', 'validate', 'tool', 'observation', 'final'];
export const TERMINAL = ['completed', 'failed', 'cancelled', 'stopped'];

export const S = {
  lang: currentLang(),
  runnerUp: false, status: null,
  modelOk: false, modelFacts: null, modelError: null, models: [], inspected: null,
  tasks: [], defaultTask: null,
  runId: null, runStatus: null, events: [], result: null, pollTimer: null, pollFailures: 0,
  manifest: null, chain: null, follow: null,
};
