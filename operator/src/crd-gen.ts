import { dump } from 'js-yaml';
import { CRD_HEADER, functionCrd } from './crd.ts';

// node operator/src/crd-gen.ts > crds/fnhost.dev_functions.yaml
process.stdout.write(CRD_HEADER + dump(functionCrd(), { lineWidth: -1, noRefs: true }));
