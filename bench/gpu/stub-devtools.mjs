// The single-file bundle leaves out React DevTools (ink loads it only with DEV=true).
export default { initialize() {}, connectToDevTools() {} };
