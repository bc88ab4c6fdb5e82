import { MongoServerError, type Collection, type Db } from 'mongodb';
import type { FunctionIdHome, HomeHow } from '../../function-id-home.ts';
import type { FunctionIdHomeStore } from '../../stores.ts';
import type { MongoContext } from './context.ts';

// Each functionId's home namespace on MongoDB (collection function_id_homes, _id the id):
// written by the operator, read by every gateway replica. Both writes are single-document
// atomic operations, so two operator replicas (or a replica and its successor) that race on an
// id store one home: the first claim, and a move only from the namespace it names.

const DUPLICATE_KEY = 11000;

interface HomeDoc {
  _id: string;
  namespace: string;
  name: string;
  how: HomeHow;
  at: Date;
}

function fromDoc(doc: HomeDoc | null): FunctionIdHome | null {
  return doc === null ? null : { function_id: doc._id, namespace: doc.namespace, name: doc.name, how: doc.how, at: doc.at.getTime() };
}

export class MongoFunctionIdHomeStore implements FunctionIdHomeStore {
  readonly #ctx: MongoContext;
  readonly #homes: Collection<HomeDoc>;

  constructor(db: Db, ctx: MongoContext) {
    this.#ctx = ctx;
    this.#homes = db.collection<HomeDoc>('function_id_homes');
  }

  get(functionId: string): Promise<FunctionIdHome | null> {
    return this.#ctx.run('home get', true, async () => fromDoc(await this.#homes.findOne({ _id: functionId })));
  }

  claim(home: FunctionIdHome): Promise<FunctionIdHome> {
    // $setOnInsert with upsert: an existing home is left as it is; resending is harmless.
    return this.#ctx.run('home claim', true, async () => {
      try {
        await this.#homes.updateOne(
          { _id: home.function_id },
          { $setOnInsert: { namespace: home.namespace, name: home.name, how: home.how, at: new Date(home.at) } },
          { upsert: true },
        );
      } catch (err) {
        // Two upserts of one _id at once: the loser's duplicate key means the other's insert holds.
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
      }
      return fromDoc(await this.#homes.findOne({ _id: home.function_id }))!;
    });
  }

  move(from: string, to: FunctionIdHome): Promise<FunctionIdHome | null> {
    // Conditional on the current namespace: a resend after success finds it moved and changes nothing.
    return this.#ctx.run('home move', true, async () => {
      await this.#homes.updateOne(
        { _id: to.function_id, namespace: from },
        { $set: { namespace: to.namespace, name: to.name, how: to.how, at: new Date(to.at) } },
      );
      return fromDoc(await this.#homes.findOne({ _id: to.function_id }));
    });
  }
}
