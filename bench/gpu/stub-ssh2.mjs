// The single-file bundle leaves out Docker's ssh transport (native modules); unix and tcp work.
export default {};
export const Client = class {
  constructor() {
    throw new Error("DOCKER_HOST=ssh:// is not supported by this bundle");
  }
};
